package exporter

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
)

// BenchmarkScrapeSaving is a scrape of 10,000 jobs through the exporter,
// "changed" when the state changed since the last save, "unchanged" when it
// did not. Before format 2 the changed scrape saved the state first
// (snapshot, JSON, fsync, rename); now both render the state last saved and
// write nothing: the saver saves on its own schedule.
func BenchmarkScrapeSaving(b *testing.B) {
	const n = 10000
	e := hourlyJobs(b, n)
	now := time.Now()
	var evs []model.Event
	for i := range n {
		j := fmt.Sprintf("job_%05d", i)
		evs = append(evs,
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-2 * time.Hour)},
			model.Event{Kind: model.End, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-time.Hour), Result: model.Success, HasExitCode: true},
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 4, Time: now.Add(-time.Second)})
	}
	e.tracker.Apply(model.Batch{Source: "runs", Events: evs})
	if err := e.save(); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collectors()...)
	scrape := func(b *testing.B, change bool) {
		for b.Loop() {
			if change {
				e.tracker.Apply(model.Batch{Source: "runs", Events: []model.Event{{Kind: model.Skip, Job: "job_00000", Time: now}}})
			}
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				enc.Encode(mf)
			}
		}
	}
	b.Run("changed", func(b *testing.B) { scrape(b, true) })
	b.Run("unchanged", func(b *testing.B) { scrape(b, false) })
}

// hourlyJobs is an exporter of n jobs job_00000... run every hour, its
// tracker configured with a run log source "runs".
func hourlyJobs(tb testing.TB, n int) *Exporter {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jobwatch.yml"), []byte(hourlyJobsConfig(n)), 0o600); err != nil {
		tb.Fatal(err)
	}
	e, err := New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		tb.Fatal(err)
	}
	e.tracker.Configure(e.running.jobs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	return e
}

// hourlyJobsConfig is the jobs: of n jobs job_00000... run every hour.
func hourlyJobsConfig(n int) string {
	var cfg strings.Builder
	cfg.WriteString("jobs:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: job_%05d\n    every: 1h\n", i)
	}
	return cfg.String()
}
