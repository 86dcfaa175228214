package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// TestAbandonedRuns: a run jobwatch cannot check, of a job without
// timeout, ends as lost once abandon_after has passed since it started, or
// when a later run takes the shared lock it held a lease of; a run it can
// check (this host, a PID) is left to the process check. Its end, read
// after that, is still its result.
func TestAbandonedRuns(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	setup := func() (*Tracker, *fakeClock) {
		clock := &fakeClock{now: now}
		tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
		tr.Configure([]JobSpec{{Name: "sync", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, AbandonAfter: 2 * time.Hour}},
			[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
		return tr, clock
	}
	t.Run("open for abandon_after", func(t *testing.T) {
		tr, clock := setup()
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
			start("sync", "db1", 10, now.Add(-time.Minute)),  // another host's
			start("sync", "here", 11, now.Add(-time.Minute)), // this host's: its process is checked
		}})
		clock.Advance(119 * time.Minute)
		tr.Reap()
		if j := jobView(t, tr, "sync"); len(j.Open) != 2 {
			t.Fatalf("running %d before two periods, want 2", len(j.Open))
		}
		clock.Advance(2 * time.Minute)
		tr.Reap()
		j := jobView(t, tr, "sync")
		if len(j.Open) != 1 || j.Open[0].Host != "here" || j.RunCounts[3] != 1 {
			t.Fatalf("running %+v, lost %d; want this host's run only, one lost", j.Open, j.RunCounts[3])
		}
		// Its end, read later, is still its result (the lost count
		// stays: counters never go back), once.
		late := end("sync", "db1", 10, clock.Now().Add(-time.Second), Success)
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{late, late}})
		clock.Advance(5 * time.Second)
		tr.Reap()
		if j := jobView(t, tr, "sync"); j.RunCounts[0] != 1 || j.RunCounts[3] != 1 || j.ConsecutiveFailures != 0 || !j.LastSuccess.Equal(late.Time) {
			t.Errorf("successes %d, lost %d, failures in a row %d, last success %s after its late end; want 1, 1, 0, %s",
				j.RunCounts[0], j.RunCounts[3], j.ConsecutiveFailures, j.LastSuccess, late.Time)
		}
	})
	t.Run("a later run takes its lease", func(t *testing.T) {
		tr, clock := setup()
		leased := start("sync", "db1", 10, now.Add(-10*time.Minute))
		leased.LockTTL = time.Minute
		plain := start("sync", "db2", 20, now.Add(-9*time.Minute)) // no lease: a later start does not end it
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{leased, plain, start("sync", "db3", 30, now.Add(-time.Minute))}})
		clock.Advance(5 * time.Second)
		tr.Reap()
		j := jobView(t, tr, "sync")
		if len(j.Open) != 2 || j.RunCounts[3] != 1 {
			t.Fatalf("running %+v, lost %d; want db2's and db3's, db1's lost", j.Open, j.RunCounts[3])
		}
		for _, r := range j.Open {
			if r.Host == "db1" {
				t.Errorf("the leased run is still running: %+v", r)
			}
		}
	})
}

// TestHostLockTaken: a later run on the same host that holds the host's
// lock file (its start says lock: file) ends an earlier run there that
// never wrote its end; one that holds no lock, or runs on another host,
// does not (an overlap it makes is counted).
func TestHostLockTaken(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: now}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "sync", Schedule: schedule.Every(time.Minute), StaleMultiple: 1000}},
		[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	locked := func(host string, pid int, at time.Time) Event {
		ev := start("sync", host, pid, at)
		ev.Lock = "file"
		return ev
	}
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		locked("db1", 1, now.Add(-10*time.Minute)),       // killed: no end
		start("sync", "db1", 2, now.Add(-9*time.Minute)), // no lock: an overlap, db1's first goes on
		locked("db2", 3, now.Add(-8*time.Minute)),        // another host's lock
		locked("db1", 4, now.Add(-7*time.Minute)),        // took db1's lock: 1 and 2 are gone
		end("sync", "db1", 4, now.Add(-6*time.Minute), Success),
	}})
	clock.Advance(5 * time.Second)
	tr.Reap()
	j := jobView(t, tr, "sync")
	if len(j.Open) != 1 || j.Open[0].Host != "db2" || j.RunCounts[3] != 2 || j.RunCounts[0] != 1 || j.Overlaps != 1 {
		t.Fatalf("running %+v, lost %d, successes %d, overlaps %d; want db2's only, 2, 1, 1", j.Open, j.RunCounts[3], j.RunCounts[0], j.Overlaps)
	}
}
