package model

import (
	"fmt"
	"testing"
	"time"

	"jobwatch/schedule"
)

// BenchmarkApply is the model's share of ingest: batches of 100 start and
// end records over 100 jobs, as a run-log source hands them over.
func BenchmarkApply(b *testing.B) {
	tr := New(Options{Host: "here", Alive: func(int) bool { return true }})
	var jobs []JobSpec
	for i := range 100 {
		jobs = append(jobs, JobSpec{Name: fmt.Sprintf("job_%03d", i), Schedule: schedule.Every(time.Hour), StaleMultiple: 2})
	}
	tr.Configure(jobs, []SourceSpec{{Name: "runs", Type: "runlog"}})
	t0 := time.Now().Add(-time.Hour)
	batch := Batch{Source: "runs", Position: []byte(`{"offset":1}`)}
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
