package model

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// Verdicts that hold on real hosts (issue 39): a run jobwatch cannot check
// stays in progress past its periods; a timeout equal to the wrapper's is
// a timeout; a host ahead moves no other job's watermark; a replayed
// backlog loses no run.

// TestUncheckedRunStaysInProgress: a run without host or PID (an
// application's own log) of a job without timeout is in progress for as
// long as it runs, three periods and more, and its end is its result; with
// no end at all it is closed as lost at abandon_after (24 h by default).
func TestUncheckedRunStaysInProgress(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: now}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "app", Schedule: schedule.Every(10 * time.Second), StaleMultiple: 2}},
		[]SourceSpec{{Name: "log", Type: "runlog", Runs: true, LateWindow: time.Second}})
	apply := func(evs ...Event) {
		tr.Apply(Batch{Source: "log", AtEnd: true, Events: evs})
	}
	apply(Event{Kind: Start, Job: "app", RunID: "r1", Time: now})
	for range 30 {
		clock.Advance(time.Second)
		tr.Reap()
	}
	if j := jobView(t, tr, "app"); len(j.Open) != 1 || j.RunCounts[3] != 0 {
		t.Fatalf("after three periods: running %d, lost %d; want 1 and 0", len(j.Open), j.RunCounts[3])
	}
	clock.Advance(15 * time.Second)
	apply(Event{Kind: End, Job: "app", RunID: "r1", Time: clock.Now(), Result: Success, Duration: 45 * time.Second, HasDuration: true})
	clock.Advance(2 * time.Second)
	tr.Reap()
	if j := jobView(t, tr, "app"); len(j.Open) != 0 || j.RunCounts[0] != 1 || j.RunCounts[3] != 0 {
		t.Fatalf("after its end: running %d, successes %d, lost %d; want 0, 1, 0", len(j.Open), j.RunCounts[0], j.RunCounts[3])
	}

	// No end: in progress for a day, then lost.
	apply(Event{Kind: Start, Job: "app", RunID: "r2", Time: clock.Now()})
	clock.Advance(23 * time.Hour)
	tr.Reap()
	if j := jobView(t, tr, "app"); len(j.Open) != 1 {
		t.Fatalf("after 23 h: running %d, want 1", len(j.Open))
	}
	clock.Advance(time.Hour + 2*time.Second)
	tr.Reap()
	if j := jobView(t, tr, "app"); len(j.Open) != 0 || j.RunCounts[3] != 1 {
		t.Fatalf("after 24 h: running %d, lost %d; want 0 and 1", len(j.Open), j.RunCounts[3])
	}
}

// TestTimeoutEqualsWrappers: timeout: 15s in the config and jobwatch run
// --timeout 15s: the wrapper's end, 15.03 s after the start (status
// timeout, or a failure with exit 124), or 25.03 s (exit 137: SIGKILLed
// --kill-after, 10 s, after the SIGTERM), is a timeout, not a lost run; a
// run with no end is closed as lost at its timeout once the source's late
// window and TimeoutMargin have passed.
func TestTimeoutEqualsWrappers(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		end    *Event
		after  time.Duration // the end's, after the start
		result int           // index in Results
	}{
		{"status timeout", &Event{Result: Timeout, ExitCode: 124, HasExitCode: true}, 15030 * time.Millisecond, 2},
		{"exit 124", &Event{Result: Failure, ExitCode: 124, HasExitCode: true}, 15030 * time.Millisecond, 2},
		{"exit 137 after kill-after", &Event{Result: Failure, ExitCode: 137, HasExitCode: true}, 25030 * time.Millisecond, 2},
		{"exit 1", &Event{Result: Failure, ExitCode: 1, HasExitCode: true}, 15030 * time.Millisecond, 1},
		{"no end", nil, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: now}
			tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
			tr.Configure([]JobSpec{{Name: "j", Schedule: schedule.Every(time.Minute), Timeout: 15 * time.Second, StaleMultiple: 2}},
				[]SourceSpec{{Name: "log", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
			tr.Apply(Batch{Source: "log", AtEnd: true, Events: []Event{start("j", "db1", 7, now)}})
			// Reaps every 100 ms up to the end.
			for clock.Now().Before(now.Add(tc.after - 100*time.Millisecond)) {
				clock.Advance(100 * time.Millisecond)
				tr.Reap()
			}
			clock.now = now.Add(tc.after)
			if tc.end != nil {
				ev := *tc.end
				ev.Kind, ev.Job, ev.Host, ev.PID, ev.Time = End, "j", "db1", 7, clock.Now()
				tr.Apply(Batch{Source: "log", AtEnd: true, Events: []Event{ev}})
			}
			for range 400 {
				clock.Advance(100 * time.Millisecond)
				tr.Reap()
			}
			j := jobView(t, tr, "j")
			want := [6]uint64{}
			want[tc.result] = 1
			if j.RunCounts != want || len(j.Open) != 0 {
				t.Fatalf("runs by result %v, running %d; want %v, 0", j.RunCounts, len(j.Open), want)
			}
			if tc.end == nil && !j.LastFailure.Equal(now.Add(15*time.Second)) {
				t.Errorf("lost at %s, want at its timeout %s", j.LastFailure, now.Add(15*time.Second))
			}
		})
	}
}

// TestHostAheadMovesNoWatermark: a host whose clock is 4 minutes ahead,
// in the same source as a healthy minutely job, adds no missed run to it
// (its records no longer push the source's watermark past the clock); its
// skew is shown, within tolerance hosts' are not, and it drops out once
// its clock is right again.
func TestHostAheadMovesNoWatermark(t *testing.T) {
	start0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start0}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{
		{Name: "healthy", Schedule: grid{time.Minute}, Grace: 10 * time.Second, StaleMultiple: 2},
		{Name: "ahead", Schedule: grid{time.Minute}, Grace: 10 * time.Second, StaleMultiple: 2},
	}, []SourceSpec{{Name: "log", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
	skew := 240 * time.Second
	pid := 0
	run := func(job, host string, at time.Time) []Event {
		pid++
		return []Event{start(job, host, pid, at), end(job, host, pid, at.Add(time.Second), Success)}
	}
	for s := range 10 * 60 { // ten minutes, a second at a time
		clock.Advance(time.Second)
		var evs []Event
		if s%60 == 5 {
			evs = append(evs, run("healthy", "web1", clock.Now().Add(-time.Second))...)
			evs = append(evs, run("ahead", "fast", clock.Now().Add(skew-time.Second))...)
		}
		// The records in a batch not at the source's end (its watermark
		// then follows the records), the next poll at its end.
		tr.Apply(Batch{Source: "log", AtEnd: len(evs) == 0, Events: evs})
		tr.Reap()
	}
	if j := jobView(t, tr, "healthy"); j.Missed != 0 || j.RunCounts[0] != 10 {
		t.Errorf("the healthy job beside a host ahead: missed %d, successes %d; want 0 and 10", j.Missed, j.RunCounts[0])
	}
	skews := tr.HostSkews()
	if len(skews) != 1 || skews[0].Host != "fast" || skews[0].Offset < skew-2*time.Second || skews[0].Offset > skew {
		t.Fatalf("skews %+v, want fast's only, about %s", skews, skew)
	}
	// Its clock put right: it drops out within two minutes of records.
	for s := range 3 * 60 {
		clock.Advance(time.Second)
		var evs []Event
		if s%10 == 0 {
			evs = run("ahead", "fast", clock.Now().Add(-time.Second))
		}
		tr.Apply(Batch{Source: "log", AtEnd: true, Events: evs})
	}
	if skews := tr.HostSkews(); len(skews) != 0 {
		t.Errorf("skews %+v after the host's clock was put right, want none", skews)
	}
}

// TestHostSkewsBounded: at most MaxSkewSeries hosts are shown, those
// furthest off; a host behind is shown only beyond its source's late
// window, and only from a source at its end (not a backlog's old records).
func TestHostSkewsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: now}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold})
	tr.Configure(nil, []SourceSpec{{Name: "log", Type: "runlog", Runs: true, LateWindow: 5 * time.Second}})
	var evs []Event
	for i := range 150 {
		evs = append(evs, Event{Kind: Skip, Job: "x", Host: fmt.Sprintf("h%03d", i), Time: now.Add(time.Duration(11+i) * time.Second)})
	}
	evs = append(evs, Event{Kind: Skip, Job: "x", Host: "behind", Time: now.Add(-5 * time.Minute)})
	tr.Apply(Batch{Source: "log", Events: evs}) // a backlog: behind says nothing
	if skews := tr.HostSkews(); len(skews) != MaxSkewSeries || skews[0].Host != "h050" || skews[len(skews)-1].Host != "h149" {
		t.Fatalf("%d skews from %+v to %+v; want %d, h050 to h149", len(skews), skews[0], skews[len(skews)-1], MaxSkewSeries)
	}
	tr.Apply(Batch{Source: "log", AtEnd: true, Events: []Event{
		{Kind: Skip, Job: "x", Host: "behind", Time: now.Add(-5 * time.Minute)},
		{Kind: Skip, Job: "x", Host: "slow", Time: now.Add(-14 * time.Second)}, // within tolerance once the window is taken off
	}})
	found := map[string]time.Duration{}
	for _, s := range tr.HostSkews() {
		found[s.Host] = s.Offset
	}
	if d, ok := found["behind"]; !ok || d != -5*time.Minute+5*time.Second {
		t.Errorf("behind: %s (shown %v), want -4m55s", d, ok)
	}
	if _, ok := found["slow"]; ok {
		t.Errorf("slow shown: %s", found["slow"])
	}
}

// TestReplayedBacklog: a backlog of 20,000 runs dated four days ago, of a
// job started every 10 s whose runs take 45 s (an application's log: no
// host, no PID), read at start with the default start-up hold: every run
// is counted with its result, none lost, whenever the hold ends.
func TestReplayedBacklog(t *testing.T) {
	const runs = 20_000
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	base := now.Add(-96 * time.Hour)
	clock := &fakeClock{now: now}
	tr := New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }}) // the default start-up hold
	tr.Configure([]JobSpec{{Name: "app", Schedule: schedule.Every(10 * time.Second), StaleMultiple: 2}},
		[]SourceSpec{{Name: "log", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
	var evs []Event
	for i := range runs {
		at := base.Add(time.Duration(i) * 10 * time.Second)
		id := fmt.Sprintf("r%d", i)
		evs = append(evs, Event{Kind: Start, Job: "app", RunID: id, Time: at})
		if i%10 == 3 {
			evs = append(evs, Event{Kind: End, Job: "app", RunID: id, Time: at.Add(45 * time.Second), Result: Failure, ExitCode: 1, HasExitCode: true})
		} else {
			evs = append(evs, Event{Kind: End, Job: "app", RunID: id, Time: at.Add(45 * time.Second), Result: Success, ExitCode: 0, HasExitCode: true})
		}
	}
	slices.SortStableFunc(evs, func(a, b Event) int { return a.Time.Compare(b.Time) })
	// 500 records a batch, 100 ms apart: the hold ends in the middle.
	for i := 0; i < len(evs); i += 500 {
		n := min(500, len(evs)-i)
		tr.Apply(Batch{Source: "log", Events: evs[i : i+n], AtEnd: i+n == len(evs)})
		clock.Advance(100 * time.Millisecond)
		tr.Reap()
	}
	clock.Advance(time.Minute)
	tr.Reap()
	j := jobView(t, tr, "app")
	if j.RunCounts != [6]uint64{runs - runs/10, runs / 10, 0, 0, 0, 0} || len(j.Open) != 0 {
		t.Fatalf("runs by result %v, running %d; want [%d %d 0 0 0], 0", j.RunCounts, len(j.Open), runs-runs/10, runs/10)
	}
}
