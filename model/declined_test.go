package model

import (
	"testing"
	"time"
)

// declined is the end of a run that started and declined to run (jobwatch
// run --skipped-exit, --skipped-output): status skipped, with the start's
// run id.
func declined(job, host string, pid int, id string, t time.Time) Event {
	return Event{Kind: End, Job: job, Host: host, PID: pid, RunID: id, Time: t, Result: Skipped, ExitCode: 75, HasExitCode: true,
		Duration: 20 * time.Millisecond, HasDuration: true, Reason: "locked", SkipLabel: "locked"}
}

func withRunID(e Event, id string) Event { e.RunID = id; return e }

// A start followed by an end with status skipped is a skip: not a finished
// run (runs_total, durations), not running, not an overlap with the run in
// progress around it (whose lock made it decline), and last success stays
// where it was.
func TestStartThenSkippedEndIsASkip(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]Event // each applied at its end: the records of one are decided together
		// overlaps: a start decided before its end was read (later than
		// the late window) was judged as a run then, and a decision is
		// final; it is still a skip, not a run, and not running.
		overlaps uint64
	}{
		{"start and end read together", [][]Event{{
			withRunID(start("stats", "web1", 50, at(time.Minute)), "b"),
			declined("stats", "web1", 50, "b", at(time.Minute+20*time.Millisecond)),
		}}, 0},
		{"start decided before its end is read", [][]Event{
			{withRunID(start("stats", "web1", 50, at(time.Minute)), "b")},
			{declined("stats", "web1", 50, "b", at(time.Minute+20*time.Millisecond))},
		}, 1},
		{"end naming its run by host and pid", [][]Event{{
			start("stats", "web1", 50, at(time.Minute)),
			declined("stats", "web1", 50, "", at(time.Minute+20*time.Millisecond)),
		}}, 0},
		{"a check-in skip with the start's rid", [][]Event{{
			withRunID(start("stats", "web1", 0, at(time.Minute)), "b"),
			{Kind: Skip, Job: "stats", Host: "web1", RunID: "b", Time: at(time.Minute + time.Second), SkipLabel: "other"},
		}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: at(0)}
			tr := newTestTracker(clock, map[int]bool{42: true, 50: true})
			// A success, then a long run in progress (pid 42) whose lock
			// the declining run finds held.
			clock.now = at(30 * time.Second)
			tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
				withRunID(start("stats", "web1", 41, at(0)), "s"), withRunID(end("stats", "web1", 41, at(10*time.Second), Success), "s"),
				withRunID(start("stats", "web1", 42, at(20*time.Second)), "a"),
			}})
			for i, b := range tc.batches {
				clock.now = at(2*time.Minute + time.Duration(i)*time.Second)
				tr.Apply(Batch{Source: "runs", AtEnd: true, Events: b})
			}
			v := jobView(t, tr, "stats")
			if v.RunCounts != [6]uint64{1, 0, 0, 0} || v.Durations.Count != 1 {
				t.Errorf("runs %v, %d durations; want the one success only", v.RunCounts, v.Durations.Count)
			}
			if v.Skips != 1 || v.ConsecutiveSkips != 1 {
				t.Errorf("skips %d (consecutive %d), want 1", v.Skips, v.ConsecutiveSkips)
			}
			if v.Overlaps != tc.overlaps {
				t.Errorf("overlaps %d, want %d: a run that declined overlaps nothing it was read with", v.Overlaps, tc.overlaps)
			}
			if len(v.Open) != 1 || v.Open[0].RunID != "a" {
				t.Errorf("running %+v, want only run a", v.Open)
			}
			if !v.LastSuccess.Equal(at(10 * time.Second)) {
				t.Errorf("last success %v, want %v", v.LastSuccess, at(10*time.Second))
			}
			if got := v.Recent[len(v.Recent)-1]; got.Result() != Skipped {
				t.Errorf("latest recent run %+v, want a skip", got)
			}
		})
	}
}

// A run that starts while one that declined is still open (its skipped
// end held, not yet applied) does not overlap it.
func TestRunBesideADecliningOneIsNoOverlap(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	tr := newTestTracker(clock, map[int]bool{42: true, 50: true})
	clock.now = at(time.Minute)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		withRunID(start("stats", "web1", 50, at(10*time.Second)), "b"),
		withRunID(start("stats", "web1", 42, at(10*time.Second+5*time.Millisecond)), "a"),
		declined("stats", "web1", 50, "b", at(10*time.Second+20*time.Millisecond)),
	}})
	v := jobView(t, tr, "stats")
	if v.Overlaps != 0 || v.Skips != 1 || len(v.Open) != 1 || v.Open[0].RunID != "a" {
		t.Errorf("overlaps %d, skips %d, running %+v; want 0, 1, run a", v.Overlaps, v.Skips, v.Open)
	}
}
