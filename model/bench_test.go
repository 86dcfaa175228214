package model

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// BenchmarkApply is the model's share of ingest: batches of 100 start and
// end records over 100 jobs, as a run-log source hands them over.
func BenchmarkApply(b *testing.B) {
	tr := New(Options{Host: "here", Alive: func(int) bool { return true }})
	var jobs []JobSpec
	for i := range 100 {
		jobs = append(jobs, JobSpec{Name: fmt.Sprintf("job_%03d", i), Schedule: schedule.Every(time.Hour), StaleMultiple: 2})
	}
	tr.Configure(jobs, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	t0 := time.Now().Add(-time.Hour)
	batch := Batch{Source: "runs", AtEnd: true, Position: []byte(`{"offset":1}`)}
	for i := range 50 {
		job := jobs[i*2%100].Name
		batch.Events = append(batch.Events,
			Event{Kind: Start, Job: job, Host: "web1", PID: i + 1, Time: t0},
			Event{Kind: End, Job: job, Host: "web1", PID: i + 1, Time: t0.Add(time.Second), Result: Success, HasExitCode: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.Apply(batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Events)), "ns/record")
}

// memJobs is a tracker of n jobs, each with runs finished (two runs and a
// skip as collector's benchmarks have, or the given number of runs: a
// fleet job keeps MaxRecentRuns recent runs and MaxDurationHistory
// durations) and one run in progress.
func memJobs(n, runs int, now time.Time) *Tracker {
	tr := New(Options{Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	specs := make([]JobSpec, n)
	for i := range specs {
		specs[i] = JobSpec{Name: fmt.Sprintf("job_%05d", i), Schedule: schedule.Every(time.Hour), Timeout: time.Hour, StaleMultiple: 2}
	}
	tr.Configure(specs, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	for i := range specs {
		j := specs[i].Name
		var evs []Event
		if runs == 0 {
			evs = append(evs,
				Event{Kind: Start, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-2 * time.Hour)},
				Event{Kind: End, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-time.Hour), Result: Success, HasExitCode: true},
				Event{Kind: End, Job: j, Host: "web1", PID: i + 2, Time: now.Add(-time.Minute), Result: Failure, ExitCode: 1, HasExitCode: true},
				Event{Kind: Skip, Job: j, Host: "web1", PID: i + 3, Time: now.Add(-time.Minute)})
		}
		for k := range runs {
			at := now.Add(-time.Duration(runs-k) * time.Hour)
			res := Success
			if k%10 == 0 {
				res = Failure
			}
			evs = append(evs,
				Event{Kind: Start, Job: j, Host: "web1", PID: 1000 + k, Time: at},
				Event{Kind: End, Job: j, Host: "web1", PID: 1000 + k, Time: at.Add(time.Duration(k+1) * time.Second), Result: res, HasExitCode: true})
		}
		evs = append(evs, Event{Kind: Start, Job: j, Host: "web1", PID: i + 4, Time: now.Add(-time.Second)})
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: evs})
	}
	return tr
}

// BenchmarkMemoryPerJob reports the heap the job model holds per job: the
// tracker alone, and with the saved state the exporter keeps for scrapes
// (one view of every job). "fleet" jobs keep MaxRecentRuns recent runs and
// MaxDurationHistory durations, as a fleet's central jobwatch holds them.
func BenchmarkMemoryPerJob(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const n = 10000
	for _, c := range []struct {
		name string
		runs int
	}{{"bench", 0}, {"fleet", MaxDurationHistory}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var before, model, saved runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				tr := memJobs(n, c.runs, now)
				runtime.GC()
				runtime.ReadMemStats(&model)
				s := (*Saved)(nil).With(tr.Changes())
				runtime.GC()
				runtime.ReadMemStats(&saved)
				b.ReportMetric(float64(model.HeapAlloc-before.HeapAlloc)/n, "model-B/job")
				b.ReportMetric(float64(saved.HeapAlloc-before.HeapAlloc)/n, "with-view-B/job")
				runtime.KeepAlive(tr)
				runtime.KeepAlive(s)
			}
		})
	}
}
