package model

import (
	"testing"
	"time"
)

// TestBatchWatermark: a source that says what it can still hand over (a
// database's oldest open transaction) holds its jobs' decisions there, not
// at the clock less its late window, and a record dated after that
// watermark, handed over later, is on time: not late, not lost.
func TestBatchWatermark(t *testing.T) {
	clock := &fakeClock{now: oracleEnd}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure(oracleJobs(), []SourceSpec{{Name: "db", Type: "mysql", Runs: true, LateWindow: time.Second}})
	open := clock.now.Add(-3 * time.Minute) // a transaction open since (the job times out at 4m)
	first := Event{Kind: Start, Job: "host", Host: "a", PID: 1, RunID: "r1", Time: clock.now.Add(-time.Minute)}
	tr.Apply(Batch{Source: "db", AtEnd: true, Watermark: open, Events: []Event{first}})
	clock.Advance(5 * time.Second)
	tr.Reap()
	if j := jobView(t, tr, "host"); len(j.Pending) != 1 || len(j.Open) != 0 {
		t.Fatalf("held back by the open transaction: %d held, %d running; want 1 and 0", len(j.Pending), len(j.Open))
	}
	// The transaction commits its row, older than the first.
	older := Event{Kind: Start, Job: "host", Host: "b", PID: 2, RunID: "r0", Time: open.Add(time.Second)}
	tr.Apply(Batch{Source: "db", AtEnd: true, Watermark: clock.now.Add(-2 * time.Second), Events: []Event{older}})
	tr.Reap()
	j := jobView(t, tr, "host")
	if len(j.Pending) != 0 || len(j.Open) != 2 {
		t.Errorf("after the commit: %d held, %d running; want 0 and 2", len(j.Pending), len(j.Open))
	}
	if _, srcs := tr.View(); lateRecords(srcs) != 0 {
		t.Errorf("%d late records, want 0", lateRecords(srcs))
	}
	// A watermark ahead of the clock (the database's clock ahead) goes no
	// further than the clock.
	tr.Apply(Batch{Source: "db", AtEnd: true, Watermark: clock.now.Add(time.Hour)})
	_, srcs := tr.View()
	views := make([]*SourceView, len(srcs))
	for i := range srcs {
		views[i] = &srcs[i]
	}
	if d := j.DecisionsBehind(views, clock.now); d != 0 {
		t.Errorf("decisions behind %v with a watermark ahead of the clock, want 0", d)
	}
}

// TestSourceDecisionsBehind: each source of runs is as far behind as its
// watermark, and a job as far as the furthest behind of the sources it
// waits for, from the same clocks; a source that has not reported, or
// reports no runs, has no figure.
func TestSourceDecisionsBehind(t *testing.T) {
	clock := &fakeClock{now: oracleEnd}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure(oracleJobs(), []SourceSpec{
		{Name: "fast", Type: "runlog", Runs: true, LateWindow: 2 * time.Second},
		{Name: "slow", Type: "mysql", Runs: true, LateWindow: 10 * time.Minute},
		{Name: "locks", Type: "locks"},
	})
	if _, srcs := tr.View(); len(srcs) != 3 {
		t.Fatalf("%d sources", len(srcs))
	} else if d, ok := srcs[0].DecisionsBehind(clock.now); ok {
		t.Errorf("source %s behind %v before it reported", srcs[0].Name, d)
	}
	start := Event{Kind: Start, Job: "host", Host: "a", PID: 1, Time: clock.now.Add(-time.Minute)}
	tr.Apply(Batch{Source: "fast", AtEnd: true, Events: []Event{start}})
	tr.Apply(Batch{Source: "slow", AtEnd: true, Events: []Event{start}})
	_, srcs := tr.View()
	views := make([]*SourceView, len(srcs))
	want := map[string]time.Duration{"fast": 2 * time.Second, "slow": 10 * time.Minute}
	for i := range srcs {
		views[i] = &srcs[i]
		d, ok := srcs[i].DecisionsBehind(clock.now)
		if w, has := want[srcs[i].Name]; ok != has || d != w {
			t.Errorf("source %s: %v behind (%v), want %v (%v)", srcs[i].Name, d, ok, w, has)
		}
	}
	if j := jobView(t, tr, "host"); j.DecisionsBehind(views, clock.now) != 10*time.Minute {
		t.Errorf("job behind %v, want the slow source's 10m", j.DecisionsBehind(views, clock.now))
	}
}
