package model

import (
	"fmt"
	"testing"
	"time"
)

// shownFacts are the facts a scrape shows of a job, which never go back.
type shownFacts struct {
	runs        [6]uint64
	skips       uint64
	durations   uint64
	lockLost    [2]uint64
	lastSuccess time.Time
	lastFailure time.Time
	lastStart   time.Time
}

func factsOf(v *JobView) shownFacts {
	return shownFacts{v.RunCounts, v.Skips, v.Durations.Count, v.LockLostCounts, v.LastSuccess.Time(), v.LastFailure.Time(), v.LastStart.Time()}
}

// factsNeverGoBack panics (the oracle runs without a *testing.T) when a
// fact a job shows now is less than it showed at the last call, prev: a
// counter shown went back, or a record's fact was shown once and then
// counted again at its verdict (the last call, on the decided state,
// would be less than the figures shown before).
func factsNeverGoBack(tr *Tracker, prev map[string]shownFacts) {
	jobs, _ := tr.View()
	for i := range jobs {
		f, p := factsOf(jobs[i].Shown()), prev[jobs[i].Spec.Name]
		back := f.skips < p.skips || f.durations < p.durations || f.lastSuccess.Before(p.lastSuccess) ||
			f.lastFailure.Before(p.lastFailure) || f.lastStart.Before(p.lastStart) ||
			f.lockLost[0] < p.lockLost[0] || f.lockLost[1] < p.lockLost[1]
		for r := range f.runs {
			back = back || f.runs[r] < p.runs[r]
		}
		if back {
			panic(fmt.Sprintf("job %s: the facts shown went back:\nbefore %+v\nnow    %+v", jobs[i].Spec.Name, p, f))
		}
		prev[jobs[i].Spec.Name] = f
	}
}

// shownJob is the job as a scrape shows it: through the saved state, as
// the saver commits it and the collector renders it.
func shownJob(t *testing.T, tr *Tracker, saved **Saved, name string) *JobView {
	t.Helper()
	*saved = (*saved).With(tr.Changes())
	jobs, _ := (*saved).View()
	for i := range jobs {
		if jobs[i].Spec.Name == name {
			return &jobs[i]
		}
	}
	t.Fatalf("job %q not in the saved view", name)
	return nil
}

// TestFactsAtOnceLongWindow: records stamped now, from a source whose late
// window is ten minutes (a job_runs table's), show their facts the moment
// they are read: the run in progress, then its result, exit code, duration
// and last success, a skip; the same run's end from a second source, or
// read again, counts once; the verdicts (slots, missed runs, runs in a
// row) wait for the watermark, and when it passes, the figures shown stay
// as they were. On the wall clock and on a fake one.
func TestFactsAtOnceLongWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  func() time.Time
	}{
		{"fake clock", (&fakeClock{now: oracleStart}).Now},
		{"wall clock", time.Now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.now()
			var offset time.Duration // the wall clock's own, plus how far the test moved it
			now := func() time.Time { return tc.now().Add(offset) }
			// The monotonic clock moves as the wall clock does: the test's
			// eleven minutes are not a step of the wall clock.
			mono := func() time.Duration { return time.Since(start) + offset }
			tr := New(Options{Host: "here", Now: now, Mono: mono, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
			tr.Configure([]JobSpec{{Name: "billing", Schedule: grid{time.Minute}, Grace: 20 * time.Second, Scope: "cluster", StaleMultiple: 2}},
				[]SourceSpec{
					{Name: "table", Type: "mysql", Runs: true, LateWindow: 10 * time.Minute},
					{Name: "checkins", Type: "checkins", Runs: true, LateWindow: 10 * time.Minute},
				})
			var saved *Saved
			tr.Apply(Batch{Source: "table", AtEnd: true})
			tr.Apply(Batch{Source: "checkins", AtEnd: true})

			t0 := now()
			tr.Apply(Batch{Source: "table", AtEnd: true, Events: []Event{{Kind: Start, Job: "billing", Host: "db1", RunID: "r1", Time: t0}}})
			v := shownJob(t, tr, &saved, "billing")
			if len(v.Open) != 1 || v.Open[0].RunID != "r1" || !v.LastStart.Equal(t0) {
				t.Fatalf("a start read now is not shown as a run in progress: open %+v, last start %v", v.Open, v.LastStart)
			}
			if len(v.Pending) != 1 {
				t.Fatalf("held %d records, want the start held for its verdict", len(v.Pending))
			}

			t1 := t0.Add(20 * time.Second)
			offset += 20 * time.Second
			end := Event{Kind: End, Job: "billing", Host: "db1", RunID: "r1", Time: t1, Result: Success, HasExitCode: true}
			tr.Apply(Batch{Source: "table", AtEnd: true, Events: []Event{end}})
			tr.Apply(Batch{Source: "checkins", AtEnd: true, Events: []Event{end}}) // the same run, reported twice
			tr.Apply(Batch{Source: "checkins", AtEnd: true, Events: []Event{{Kind: Skip, Job: "billing", Host: "db2", Time: t1, SkipLabel: "locked"}}})
			v = shownJob(t, tr, &saved, "billing")
			if got := v.RunCounts[0]; got != 1 || len(v.Open) != 0 {
				t.Fatalf("after one run's end read twice: %d successes, %d open; want 1 and 0", got, len(v.Open))
			}
			if !v.LastSuccess.Equal(t1) || !v.HasLastExitCode || v.LastExitCode != 0 || !v.HasLastDuration || v.LastDuration != 20 || v.Skips != 1 {
				t.Fatalf("facts not shown: last success %v, exit %v/%d, duration %v/%v, skips %d", v.LastSuccess, v.HasLastExitCode, v.LastExitCode, v.HasLastDuration, v.LastDuration, v.Skips)
			}
			if w := v.Watch(now()); w.Stale || w.SinceSuccess > time.Second {
				t.Fatalf("a job whose success is shown is judged from before it: %+v", w)
			}
			if v.Missed != 0 || v.ConsecutiveFailures != 0 || !v.DecidedUntil.Before(t0) {
				t.Fatalf("verdicts decided before the watermark: missed %d, decided until %v", v.Missed, v.DecidedUntil)
			}
			shownNow := factsOf(v)

			// The watermark passes: verdicts decided, facts as shown.
			offset += 12 * time.Minute // the window and two slots with their grace
			tr.Reap()
			v = shownJob(t, tr, &saved, "billing")
			if len(v.Pending) != 0 || !v.DecidedUntil.After(t1) {
				t.Fatalf("not decided past the records: held %d, until %v", len(v.Pending), v.DecidedUntil)
			}
			if got := factsOf(v); got != shownNow {
				t.Fatalf("the decided facts differ from those shown:\nshown   %+v\ndecided %+v", shownNow, got)
			}
			if v.Missed == 0 {
				t.Fatalf("twelve minutes without runs after the first: no slot counted missed (from %v)", start)
			}
		})
	}
}

// An end read before its start, from another source: one run, shown at
// once with the end's result, and one run once its start is read and both
// are decided.
func TestFactsEndBeforeStart(t *testing.T) {
	clock := &fakeClock{now: oracleStart}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "j", Schedule: grid{time.Minute}, Scope: "host", StaleMultiple: 2}},
		[]SourceSpec{{Name: "a", Runs: true, LateWindow: 10 * time.Minute}, {Name: "b", Runs: true, LateWindow: 10 * time.Minute}})
	var saved *Saved
	t0 := clock.now
	clock.Advance(30 * time.Second)
	tr.Apply(Batch{Source: "b", AtEnd: true, Events: []Event{{Kind: End, Job: "j", Host: "h", PID: 7, Time: clock.now, Result: Failure, ExitCode: 3, HasExitCode: true}}})
	if v := shownJob(t, tr, &saved, "j"); v.RunCounts[1] != 1 || v.LastExitCode != 3 || !v.LastFailure.Equal(clock.now) {
		t.Fatalf("an end read before its start: failures %d, exit %d, last failure %v", v.RunCounts[1], v.LastExitCode, v.LastFailure)
	}
	tr.Apply(Batch{Source: "a", AtEnd: true, Events: []Event{{Kind: Start, Job: "j", Host: "h", PID: 7, Time: t0}}})
	v := shownJob(t, tr, &saved, "j")
	if v.RunCounts[1] != 1 || len(v.Open) != 0 || !v.HasLastDuration || v.LastDuration != 30 {
		t.Fatalf("its start read after: failures %d, open %d, duration %v", v.RunCounts[1], len(v.Open), v.LastDuration)
	}
	clock.Advance(11 * time.Minute)
	tr.Reap()
	if v := shownJob(t, tr, &saved, "j"); len(v.Pending) != 0 || v.RunCounts[1] != 1 || v.ConsecutiveFailures != 1 {
		t.Fatalf("decided: held %d, failures %d, in a row %d", len(v.Pending), v.RunCounts[1], v.ConsecutiveFailures)
	}
}

// Verdicts alone (a reap, DecideHeld) signal Decided, not Changed: the
// saver commits them with the next fact. A fact after them signals
// Changed, its job marked already or not.
func TestVerdictsSignalDecided(t *testing.T) {
	clock := &fakeClock{now: oracleStart}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "j", Schedule: grid{time.Minute}, Scope: "host", StaleMultiple: 2}},
		[]SourceSpec{{Name: "a", Runs: true, LateWindow: 2 * time.Second}})
	tr.Apply(Batch{Source: "a", AtEnd: true, Events: []Event{{Kind: Start, Job: "j", Host: "h", PID: 7, Time: clock.now}}})
	if !signalled(tr.Changed()) {
		t.Fatal("a record read did not signal Changed")
	}
	tr.Changes()
	clock.Advance(3 * time.Second)
	if !tr.DecideHeld() && signalled(tr.Changed()) {
		t.Fatal("deciding a held record signalled Changed")
	}
	if !signalled(tr.Decided()) {
		t.Fatal("deciding a held record did not signal Decided")
	}
	tr.Apply(Batch{Source: "a", AtEnd: true, Events: []Event{{Kind: End, Job: "j", Host: "h", PID: 7, Time: clock.now, Result: Success}}})
	if !signalled(tr.Changed()) {
		t.Fatal("a fact after a verdict of its job did not signal Changed")
	}
	if c := tr.Changes(); c == nil || c.Jobs["j"] == nil {
		t.Fatal("the changes hold no job")
	}
}
