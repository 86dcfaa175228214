package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// CaughtUp is signalled when a source reaches its end after a catch-up
// (caughtUpRecords read since its last end), not at the end of each of a
// stream's writes.
func TestCaughtUpOncePerCatchUp(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tr := New(Options{StartupHold: NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "j", Schedule: schedule.Every(time.Minute), StaleMultiple: 2}}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
	skips := func(n int, from time.Time) []Event {
		evs := make([]Event, n)
		for i := range evs {
			evs[i] = Event{Kind: Skip, Job: "j", Host: "web1", PID: i + 1, Time: from.Add(time.Duration(i) * time.Millisecond), SkipLabel: "locked"}
		}
		return evs
	}
	// A stream: writes of a hundred records, each followed by the end.
	for w := range 50 {
		tr.Apply(Batch{Source: "runs", Events: skips(100, now.Add(-time.Hour+time.Duration(w)*time.Second))})
		tr.Apply(Batch{Source: "runs", AtEnd: true})
		if signalled(tr.CaughtUp()) {
			t.Fatalf("write %d of a stream signalled a catch-up", w)
		}
	}
	// A catch-up: batches without an end until caughtUpRecords are read.
	for range caughtUpRecords / 1000 {
		tr.Apply(Batch{Source: "runs", Events: skips(1000, now.Add(-30*time.Minute))})
		if signalled(tr.CaughtUp()) {
			t.Fatal("signalled before the source reached its end")
		}
	}
	tr.Apply(Batch{Source: "runs", AtEnd: true})
	if !signalled(tr.CaughtUp()) {
		t.Fatal("the end of a catch-up was not signalled")
	}
	tr.Apply(Batch{Source: "runs", AtEnd: true})
	if signalled(tr.CaughtUp()) {
		t.Fatal("signalled again with nothing read since")
	}
}

// signalled reports whether c holds a signal, taking it.
func signalled(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
