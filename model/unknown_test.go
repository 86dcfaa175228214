package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// unloggedStart is a cron start at -L 1: its end will not be logged.
func unloggedStart(job string, pid int, t time.Time) Event {
	e := start(job, "here", pid, t)
	e.EndUnlogged = true
	return e
}

func newCronTracker(t *testing.T, clock func() time.Time, alive map[int]bool, window time.Duration) *Tracker {
	t.Helper()
	tr := New(Options{Host: "here", Now: clock, StartupHold: NoStartupHold, Alive: func(pid int) bool { return alive[pid] }})
	every, err := schedule.ParseCron("* * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]JobSpec{{Name: "cronjob", Schedule: every, Grace: 30 * time.Second, StaleMultiple: 2}},
		[]SourceSpec{{Name: "journal", Type: "journal", Runs: true, LateWindow: window}})
	tr.SetHealth("journal", true, nil)
	return tr
}

// A healthy minutely cron job at -L 1 (cron logs its starts only) runs on
// schedule for 10 minutes: every run ends, when its process is gone, with
// result unknown; none is lost or failed, and the job is never stale or
// failing.
func TestEndUnloggedRunsAreUnknown(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	alive := map[int]bool{}
	tr := newCronTracker(t, clock.Now, alive, 2*time.Second)
	for s := 0; s <= 10*60; s++ {
		clock.now = at(time.Duration(s) * time.Second)
		var evs []Event
		if s%60 == 0 { // cron starts it at each minute; it runs 3 s
			pid := 1000 + s/60
			alive[pid] = true
			evs = append(evs, unloggedStart("cronjob", pid, clock.now))
		}
		if s%60 == 3 {
			delete(alive, 1000+s/60)
		}
		tr.Apply(Batch{Source: "journal", AtEnd: true, Events: evs})
		tr.Reap()
		v := jobView(t, tr, "cronjob")
		if v.ConsecutiveFailures != 0 || v.RunCounts[slicesIndex(Lost)] != 0 || v.RunCounts[slicesIndex(Failure)] != 0 {
			t.Fatalf("at %ds: %d failures in a row, runs %v", s, v.ConsecutiveFailures, v.RunCounts)
		}
		if w := v.Watch(clock.now); w.Stale {
			t.Fatalf("at %ds: stale (deadline %v)", s, w.Deadline)
		}
	}
	v := jobView(t, tr, "cronjob")
	if n := v.RunCounts[slicesIndex(Unknown)]; n != 10 {
		t.Errorf("%d runs of unknown result, want 10 (the 11th goes on)", n)
	}
	if len(v.Recent) == 0 || v.Recent[len(v.Recent)-1].Result() != Unknown || v.Recent[len(v.Recent)-1].Fields().HasDuration {
		t.Errorf("latest recent run %+v, want unknown, with no duration", v.Recent[len(v.Recent)-1])
	}
	if !v.LastSuccess.IsZero() || v.LastUnknown.IsZero() {
		t.Errorf("last success %v, last unknown %v", v.LastSuccess, v.LastUnknown)
	}
	// Its runs stop: stale once two periods and grace have passed.
	clock.now = at(10*time.Minute + 3*time.Minute)
	tr.Reap()
	if v := jobView(t, tr, "cronjob"); !v.Watch(clock.now).Stale {
		t.Error("a cron job whose runs stopped 3 minutes ago is not stale")
	}
}

// A start read before its cron was seen logging ends says its end may not
// be logged (cronlog's detection); at -L 15 its END line comes after its
// process is gone, late by less than the source's late window: the run
// ends with that END's result, never as unknown before it.
func TestEndUnloggedWaitsForALateEnd(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	alive := map[int]bool{7: true}
	tr := newCronTracker(t, clock.Now, alive, 10*time.Second)
	tr.Apply(Batch{Source: "journal", AtEnd: true, Events: []Event{unloggedStart("cronjob", 7, at(0))}})
	delete(alive, 7)
	for s := 1; s < 9; s++ { // gone from 1 s; its END is read at 9 s
		clock.now = at(time.Duration(s) * time.Second)
		tr.Apply(Batch{Source: "journal", AtEnd: true})
		tr.Reap()
	}
	clock.now = at(9 * time.Second)
	tr.Apply(Batch{Source: "journal", AtEnd: true, Events: []Event{end("cronjob", "here", 7, at(time.Second), Failure)}})
	for s := 9; s < 30; s++ {
		clock.now = at(time.Duration(s) * time.Second)
		tr.Reap()
	}
	v := jobView(t, tr, "cronjob")
	if v.RunCounts[slicesIndex(Failure)] != 1 || v.RunCounts[slicesIndex(Unknown)] != 0 || v.ConsecutiveFailures != 1 {
		t.Errorf("runs %v, %d failures in a row; want the one failure its END said", v.RunCounts, v.ConsecutiveFailures)
	}
}

// Runs of unknown result neither count as failures nor break a run of
// them: failures on either side of one are in a row.
func TestUnknownKeepsConsecutiveFailures(t *testing.T) {
	clock := &fakeClock{now: at(time.Hour)}
	tr := newTestTracker(clock, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("stats", "db1", 1, at(0)), end("stats", "db1", 1, at(time.Second), Failure),
		start("stats", "db1", 2, at(time.Minute)), end("stats", "db1", 2, at(time.Minute+time.Second), Unknown),
		start("stats", "db1", 3, at(2*time.Minute)), end("stats", "db1", 3, at(2*time.Minute+time.Second), Failure),
	}})
	if v := jobView(t, tr, "stats"); v.ConsecutiveFailures != 2 || v.RunCounts[slicesIndex(Unknown)] != 1 {
		t.Errorf("%d failures in a row, runs %v; want 2, one unknown", v.ConsecutiveFailures, v.RunCounts)
	}
}

func slicesIndex(r Result) int {
	for i, x := range Results {
		if x == r {
			return i
		}
	}
	panic(r)
}

// A run of unknown result read from history (its process was never seen
// alive: gone long before jobwatch read its start) is dated at its start:
// a cron job whose runs stopped three days ago is stale, not made fresh
// by its old runs closing now.
func TestEndUnloggedHistoryKeepsItsTime(t *testing.T) {
	clock := &fakeClock{now: at(72 * time.Hour)}
	tr := newCronTracker(t, clock.Now, map[int]bool{}, 2*time.Second)
	tr.Apply(Batch{Source: "journal", AtEnd: true, Events: []Event{unloggedStart("cronjob", 9, at(0)), unloggedStart("cronjob", 10, at(time.Minute))}})
	for range 2 {
		tr.Reap()
		clock.Advance(time.Minute)
	}
	v := jobView(t, tr, "cronjob")
	if n := v.RunCounts[slicesIndex(Unknown)]; n != 2 {
		t.Fatalf("%d runs of unknown result, want 2", n)
	}
	if !v.LastUnknown.Equal(at(time.Minute)) {
		t.Errorf("last unknown %v, want the latest run's start %v", v.LastUnknown, at(time.Minute))
	}
	if !v.Watch(clock.now).Stale {
		t.Error("a cron job whose last run was three days ago is not stale")
	}
}

// A start-only cron run of another host (its syslog forwarded here, cron
// at -L 1) cannot be checked: it stays in progress until abandon_after
// and then ends as unknown, not lost.
func TestEndUnloggedUncheckedEndsUnknown(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	tr := newCronTracker(t, clock.Now, map[int]bool{}, 2*time.Second)
	ev := unloggedStart("cronjob", 4242, clock.now)
	ev.Host = "elsewhere"
	tr.Apply(Batch{Source: "journal", AtEnd: true, Events: []Event{ev}})
	for _, after := range []time.Duration{time.Hour, DefaultAbandonAfter + time.Minute} {
		clock.now = at(after)
		tr.Reap()
	}
	v := jobView(t, tr, "cronjob")
	if len(v.Open) != 0 || v.RunCounts[slicesIndex(Unknown)] != 1 || v.RunCounts[slicesIndex(Lost)] != 0 || v.ConsecutiveFailures != 0 {
		t.Fatalf("running %d, runs %v, %d failures in a row; want one unknown run", len(v.Open), v.RunCounts, v.ConsecutiveFailures)
	}
}
