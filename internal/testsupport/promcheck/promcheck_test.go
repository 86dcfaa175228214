package promcheck

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/exporter"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []string
	}{
		{"selector", `jobwatch_job_stale{job_name="a", instance=~"x|y"}`, []string{"jobwatch_job_stale"}},
		{"function and range", `increase(jobwatch_job_overlaps_total[10m]) > 0`, []string{"jobwatch_job_overlaps_total"}},
		{"subquery", `max_over_time(timestamp(increase(a_total[10m]) > 0)[1d:5m])`, []string{"a_total"}},
		{"matching", `a * on(instance, job_name) group_left(scope) b{scope="cluster"}`, []string{"a", "b"}},
		{"aggregation", `sum by (job_name) (a) / count without(host, pid) (b) and bool 1e3`, []string{"a", "b"}},
		{"aggregation after", `sum(a) by (job_name)`, []string{"a"}},
		{"string arguments", `label_replace(up, "dst", "$1", "src", "(.*)")`, []string{"up"}},
		{"offset and number", `a offset 5m - 0.5 * b`, []string{"a", "b"}},
		{"keywords", `a unless on(job_name) b or c and d`, []string{"a", "b", "c", "d"}},
		{"name in braces", `{__name__="a"}`, []string{}},
		{"histogram", `histogram_quantile(0.9, sum by (le) (rate(d_bucket[5m])))`, []string{"d_bucket"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MetricNames(tc.expr)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	exported := map[string]bool{"a": true, "d": true}
	got := Unknown([]string{"a", "b", "d_bucket", "d_count", "e_sum"}, exported)
	if want := []string{"b", "e_sum"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unknown = %q, want %q", got, want)
	}
}

func TestCheckQueries(t *testing.T) {
	if err := CheckQueries(t, map[string]string{"good": `sum by (job_name) (rate(a_total[5m]))`}); err != nil {
		t.Errorf("good query rejected: %v", err)
	}
	err := CheckQueries(t, map[string]string{"good": `a`, "panel Broken": `sum by (job_name (a)`})
	if err == nil || !strings.Contains(err.Error(), "panel Broken") {
		t.Errorf("broken query: err = %v, want one naming the query", err)
	}
}

func FuzzMetricNames(f *testing.F) {
	for _, s := range []string{`a{b="c"}[5m]`, `sum by (x) (rate(y[1m]))`, `"unterminated`, `{{}}[[]]`, `a offset -5m`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range MetricNames(s) {
			if n == "" || keywords[strings.ToLower(n)] {
				t.Errorf("MetricNames(%q) returned %q", s, n)
			}
		}
	})
}

// TestContract: the exporter emits every metric of the contract.
func TestContract(t *testing.T) {
	e, err := exporter.New(exporter.Options{ConfigFile: ProbeConfig(t), StateDir: t.TempDir(), Host: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	names, err := Names(e.Collectors())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Contract {
		if !names[n] {
			t.Errorf("the exporter does not describe %s", n)
		}
	}
}
