package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// History read on first start counts: a job whose only run, 49 hours ago,
// failed has gone that long without success, not since jobwatch started.
func TestEarliestRecordCountsForStaleness(t *testing.T) {
	clock := &fakeClock{now: at(49 * time.Hour)}
	tr := newTestTracker(clock, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("backup", "db1", 9, at(0)), end("backup", "db1", 9, at(time.Minute), Failure),
	}})
	v := jobView(t, tr, "backup")
	w := v.Watch(clock.now)
	if w.SinceSuccess != 49*time.Hour || !v.FirstWatched.Equal(at(0)) {
		t.Errorf("since success %v (first watched %v), want 49h from the earliest record", w.SinceSuccess, v.FirstWatched)
	}
	if !w.Stale {
		t.Error("a daily job without a success for two days is not stale")
	}
	// A later record does not move it forward.
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("backup", "db1", 10, at(47*time.Hour))}})
	if v := jobView(t, tr, "backup"); !v.FirstWatched.Equal(at(0)) {
		t.Errorf("first watched moved to %v", v.FirstWatched)
	}
}

// A second end of a run that just ended is not a second run: it counts as
// an unreadable record of its source. Ends that name no run are runs.
func TestRepeatedEndIsNotASecondRun(t *testing.T) {
	clock := &fakeClock{now: at(time.Hour)}
	tr := newTestTracker(clock, nil)
	withID := func(e Event, id string) Event { e.RunID = id; return e }
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("stats", "web1", 42, at(0)),
		end("stats", "web1", 42, at(40*time.Second), Success),
		end("stats", "web1", 42, at(41*time.Second), Success), // repeated: same host and pid
		withID(start("stats", "web1", 0, at(10*time.Minute)), "r1"),
		withID(end("stats", "web1", 0, at(11*time.Minute), Success), "r1"),
		withID(end("stats", "web1", 0, at(11*time.Minute+time.Second), Failure), "r1"), // repeated: same run id
		end("stats", "web2", 0, at(20*time.Minute), Success),                           // no pid, no id: a run
		end("stats", "web2", 0, at(20*time.Minute+time.Second), Success),               // and another
		end("stats", "web1", 42, at(30*time.Minute), Success),                          // pid 42 again, much later: a run
	}})
	v := jobView(t, tr, "stats")
	if got := v.RunCounts[0] + v.RunCounts[1]; got != 5 {
		t.Errorf("%d finished runs, want 5 (two repeated ends not counted)", got)
	}
	if v.RunCounts[1] != 0 {
		t.Errorf("the repeated failure counted: %v", v.RunCounts)
	}
	_, srcs := tr.View()
	if srcs[0].ParseErrors != 2 || srcs[0].Records != 9 {
		t.Errorf("source counted %d records, %d unreadable; want 9 and 2", srcs[0].Records, srcs[0].ParseErrors)
	}
}

// A skip within grace of an expected run fills it: the slot was due and the
// job was started; it declined to run. It is neither missed nor unexpected.
func TestSkipFillsItsSlot(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	every10, err := schedule.ParseCron("*/10 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]JobSpec{{Name: "sync", Schedule: every10, Grace: time.Minute, StaleMultiple: 2}},
		[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	tr.SetHealth("runs", true, nil)
	clock.now = at(time.Hour)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("sync", "web1", 1, at(10*time.Second)),               // 10:00 ran
		skip("sync", at(10*time.Minute+5*time.Second)),             // 10:10 skipped
		skip("sync", at(20*time.Minute+3*time.Second)),             // 10:20 skipped
		end("sync", "web1", 1, at(25*time.Minute), Success),        //
		start("sync", "web1", 2, at(40*time.Minute+2*time.Second)), // 10:30 missed, 10:40 ran
		skip("sync", at(45*time.Minute)),                           // outside grace: no slot
		end("sync", "web1", 2, at(41*time.Minute), Success),        //
	}})
	clock.now = at(2 * time.Hour)
	tr.Reap() // counts from the clock: slots up to 11:59
	v := jobView(t, tr, "sync")
	// 10:30 missed; 10:50 through 11:50 (7 slots) missed by the clock.
	if v.Missed != 8 || v.Unexpected != 0 || v.Skips != 3 {
		t.Errorf("missed %d, unexpected %d, skips %d; want 8, 0, 3", v.Missed, v.Unexpected, v.Skips)
	}
}
