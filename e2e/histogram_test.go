package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/dashboards"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestDurationHistogramForms: a real Prometheus with native histograms
// scrapes jobwatch's duration histogram as a native histogram (protobuf)
// and answers histogram_quantile over it; one without scrapes the text
// exposition (_sum and _count only, by default) and, from a jobwatch
// with --metrics.classic-duration-buckets, the classic buckets. The
// dashboard's duration queries and JobwatchJobTimeoutTooTight give the
// same answers in every form.
func TestDurationHistogramForms(t *testing.T) {
	prometheus := need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	bin := testproc.BuildJobwatch(t, dir)
	// A timeout of 1m against runs of 30 to 49 s: 1.5 times their P99 is
	// above it, so JobwatchJobTimeoutTooTight fires once 20 runs ended.
	jwConfig, runLog := runLogConfig(t, dir, `jobs:
  - name: e2e_batch
    every: 1h
    timeout: 1m
`)
	plain, _ := startJobwatch(t, bin, jwConfig, filepath.Join(dir, "state-plain"))
	classic, _ := startJobwatch(t, bin, jwConfig, filepath.Join(dir, "state-classic"), "--metrics.classic-duration-buckets")
	noAlertmanager := testproc.FreeAddr(t)
	native := startPrometheus(t, prometheus, filepath.Join(dir, "native"), noAlertmanager, fmt.Sprintf(`
  - job_name: jobwatch
    static_configs: [{targets: [%q]}]
`, plain), "--enable-feature=native-histograms")
	text := startPrometheus(t, prometheus, filepath.Join(dir, "text"), noAlertmanager, fmt.Sprintf(`
  - job_name: jobwatch
    static_configs: [{targets: [%q, %q]}]
`, plain, classic))
	forms := []struct{ name, prom, selector string }{
		{"native", native, fmt.Sprintf(`instance=%q`, plain)},
		{"text, default", text, fmt.Sprintf(`instance=%q`, plain)},
		{"text, classic buckets", text, fmt.Sprintf(`instance=%q`, classic)},
	}
	// Each has scraped the histogram before any run, so that increase()
	// sees the runs come.
	for _, f := range forms {
		waitQuery(t, f.prom, fmt.Sprintf(`jobwatch_job_duration_seconds_count{%[1]s} == 0 or histogram_count(jobwatch_job_duration_seconds{%[1]s}) == 0`, f.selector), 1)
	}
	if n, _, err := promQuery(native, `jobwatch_job_duration_seconds_count`, true); err != nil || n != 0 {
		t.Fatalf("native histograms on, yet %d _count series (%v): the scrape was not protobuf", n, err)
	}

	now := time.Now()
	var lines []string
	var sum float64
	for i := range 20 {
		d := time.Duration(30+i) * time.Second
		sum += d.Seconds()
		end := now.Add(-time.Duration(20-i) * time.Second)
		lines = append(lines, record(end.Add(-d), "e2e_batch", "start", "web1", 100+i, ""), record(end, "e2e_batch", "end", "web1", 100+i, "success"))
	}
	appendRecords(t, runLog, lines...)
	mean := sum / 20

	meanExpr, p90Expr := durationQueries(t)
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			sel := func(expr string) string {
				return strings.ReplaceAll(expr, `job_name=~".*"`, `job_name=~".*", `+f.selector)
			}
			waitValue(t, f.prom, sel(meanExpr), "the dashboard's mean duration", func(v float64) bool { return math.Abs(v-mean) < 1e-6 })
			switch f.name {
			case "native":
				// The 90th percentile of 30..49 s: in the native bucket of
				// 47.5 s, (45.25, 49.35].
				waitValue(t, f.prom, fmt.Sprintf(`histogram_quantile(0.9, jobwatch_job_duration_seconds{%s})`, f.selector), "histogram_quantile over the native histogram",
					func(v float64) bool { return v > 45.25 && v <= 49.35 })
				waitValue(t, f.prom, sel(p90Expr), "the dashboard's p90", func(v float64) bool { return v > 45.25 && v <= 49.35 })
			case "text, classic buckets":
				// One run in (10, 30], 19 in (30, 60]: 30 + 17/19 of 30 s.
				waitValue(t, f.prom, sel(p90Expr), "the dashboard's p90", func(v float64) bool { return math.Abs(v-(30+17.0/19*30)) < 1e-6 })
			}
			waitQuery(t, f.prom, fmt.Sprintf(`ALERTS{alertname="JobwatchJobTimeoutTooTight", alertstate="firing", job_name="e2e_batch", %s}`, f.selector), 1)
		})
	}
}

// durationQueries are the dashboard's mean and p90 duration queries, with
// its variables expanded (every instance and job).
func durationQueries(t *testing.T) (mean, p90 string) {
	t.Helper()
	d, err := dashboards.Parse(dashboards.JSON)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"cluster": ".*", "job": ".*", "instance": ".*", "job_name": ".*", "__rate_interval": "1m", "datasource": "prometheus"}
	for _, q := range qs {
		e, _ := dashboards.Expand(q.Expr, vars)
		switch {
		case strings.Contains(e, "histogram_sum("):
			mean = e
		case strings.Contains(e, "histogram_quantile(0.9"):
			p90 = e
		}
	}
	if mean == "" || p90 == "" {
		t.Fatalf("no mean (%q) or p90 (%q) duration query in the dashboard", mean, p90)
	}
	return mean, p90
}

// waitValue waits until the instant query expr gives one series whose
// value ok accepts.
func waitValue(t *testing.T, promAddr, expr, what string, ok func(float64) bool) {
	t.Helper()
	testproc.Eventually(t, 40*time.Second, what+": "+expr, func() error {
		vs, err := promValues(promAddr, expr)
		if err != nil {
			return err
		}
		if len(vs) != 1 || !ok(vs[0]) {
			return fmt.Errorf("values %v", vs)
		}
		return nil
	})
}

// promValues are the values of the instant query expr.
func promValues(addr, expr string) ([]float64, error) {
	resp, err := http.PostForm("http://"+addr+"/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("status %s: %s", r.Status, r.Error)
	}
	var out []float64
	for _, res := range r.Data.Result {
		s, _ := res.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
