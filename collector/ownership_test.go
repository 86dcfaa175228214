package collector

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/internal/labelname"
	"github.com/jobwatch/jobwatch/model"
)

// TestJobConfig: the labels info series of the jobs with labels, with
// every label name any job has; a threshold series for each count set.
func TestJobConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		jobs []model.JobSpec
	}{
		{"labels and thresholds", []model.JobSpec{
			{Name: "payments", Labels: map[string]string{"team": "payments", "owner": "alice"}, AlertAfter: model.AlertAfter{Failures: 3}},
			{Name: "report", Labels: map[string]string{"team": "reports", "tier": "2"}, AlertAfter: model.AlertAfter{MissedRuns: 2, Skips: 5}},
			{Name: "plain"},
		}},
		{"none", []model.JobSpec{{Name: "plain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewJobConfig()
			c.Configure(tc.jobs)
			// Not a pedantic registry: the labels info family has the
			// config's label names, not the described job_name alone.
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			golden := "testdata/jobconfig-" + strings.ReplaceAll(tc.name, " ", "-") + ".txt"
			got, err := gatherText(reg)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(string(want))); err != nil {
				t.Error(err)
			}
		})
	}
}

// A reload that changes the label names changes the family's.
func TestJobConfigReconfigured(t *testing.T) {
	c := NewJobConfig()
	c.Configure([]model.JobSpec{{Name: "a", Labels: map[string]string{"team": "x"}}})
	c.Configure([]model.JobSpec{{Name: "a", Labels: map[string]string{"owner": "bob"}}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	want := `# HELP jobwatch_job_labels_info ` + descInfo[labelsInfoDesc].help + `
# TYPE jobwatch_job_labels_info gauge
jobwatch_job_labels_info{job_name="a",owner="bob"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "jobwatch_job_labels_info"); err != nil {
		t.Error(err)
	}
}

// Every label name of the collector's metrics, and of the kinds of
// observation, is one a config's labels: may not take.
func TestLabelNamesReserved(t *testing.T) {
	reserved := labelname.Reserved()
	for d, m := range descInfo {
		for _, l := range m.labels {
			if !slices.Contains(reserved, l) {
				t.Errorf("%s's label %s is not reserved", d, l)
			}
		}
	}
	for _, l := range []string{"job_name", "scope", "result", "reason", "host", "pid", "kind", "source", "direction", "lock"} {
		if err := labelname.Check(l); err == nil {
			t.Errorf("%s accepted", l)
		}
	}
}

// gatherText is g's exposition in the text format.
func gatherText(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// BenchmarkJobConfigGather: what the jobs' labels and thresholds add to a
// scrape, gathered through client_golang at every scrape (they are not in
// the Handler's cache of job lines): 10,000 jobs with two labels and a
// threshold each.
func BenchmarkJobConfigGather(b *testing.B) {
	jobs := make([]model.JobSpec, 10000)
	for i := range jobs {
		jobs[i] = model.JobSpec{Name: fmt.Sprintf("job-%05d", i), Labels: map[string]string{"team": fmt.Sprint("team-", i%20), "owner": "alice"},
			AlertAfter: model.AlertAfter{Failures: 3}}
	}
	c := NewJobConfig()
	c.Configure(jobs)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ResetTimer()
	for b.Loop() {
		if _, err := gatherText(reg); err != nil {
			b.Fatal(err)
		}
	}
}
