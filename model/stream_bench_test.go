package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// BenchmarkApplyStream is the model's share of a run-log catch-up, as
// BenchmarkIngest in sources/runlog reads it: 100 jobs, a start a second
// and its end 40.5 s later written right after it, in batches of 4,096
// records, the last saying AtEnd.
func BenchmarkApplyStream(b *testing.B) {
	const records, batchLen = 200_000, 4096
	specs := make([]JobSpec, 100)
	for i := range specs {
		specs[i] = JobSpec{Name: fmt.Sprintf("job_%02d", i), Schedule: schedule.Every(time.Hour), StaleMultiple: 2}
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	events := make([]Event, 0, records)
	for i := range records / 2 {
		job, start := specs[i%100].Name, t0.Add(time.Duration(i)*time.Second)
		events = append(events,
			Event{Kind: Start, Job: job, Host: "web1", PID: 1000 + i, RunID: fmt.Sprintf("%016x", i), Time: start},
			Event{Kind: End, Job: job, Host: "web1", PID: 1000 + i, RunID: fmt.Sprintf("%016x", i), Time: start.Add(40500 * time.Millisecond),
				Result: Success, HasExitCode: true, Duration: 40500 * time.Millisecond, HasDuration: true})
	}
	buf := make([]Event, batchLen)
	b.ReportAllocs()
	for b.Loop() {
		tr := New(Options{StartupHold: NoStartupHold, Host: "bench", Alive: func(int) bool { return true }})
		tr.Configure(specs, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
		for at := 0; at < len(events); at += batchLen {
			n := copy(buf, events[at:min(at+batchLen, len(events))])
			tr.Apply(Batch{Source: "runs", Events: buf[:n], Position: []byte(`{"offset":1}`), AtEnd: at+n == len(events)})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
}
