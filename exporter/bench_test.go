package exporter

import (
	"fmt"
	"io"
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
	dir := b.TempDir()
	var cfg strings.Builder
	cfg.WriteString("jobs:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: job_%05d\n    every: 1h\n", i)
	}
	writeFile(&testing.T{}, filepath.Join(dir, "jobwatch.yml"), cfg.String())
	e, err := New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var evs []model.Event
	for i := range n {
		j := fmt.Sprintf("job_%05d", i)
		evs = append(evs,
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-2 * time.Hour)},
			model.Event{Kind: model.End, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-time.Hour), Result: model.Success, HasExitCode: true},
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 4, Time: now.Add(-time.Second)})
	}
	e.tracker.Configure(e.running.jobs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
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
