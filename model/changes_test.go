package model

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

func jobNames(c *Changes) []string {
	var names []string
	for n := range c.Jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func TestChangesHoldWhatChanged(t *testing.T) {
	clock := &fakeClock{now: t0.Add(time.Hour)}
	tr := newTestTracker(clock, map[int]bool{})
	c := tr.Changes()
	if c == nil || !c.Full || len(c.Jobs) != 2 || len(c.Sources) != 1 {
		t.Fatalf("after Configure: %+v; want everything", c)
	}
	if c := tr.Changes(); c != nil {
		t.Fatalf("nothing changed, got %+v", c)
	}
	select {
	case <-tr.Changed():
	default:
		t.Fatal("no change signalled")
	}

	tr.Apply(Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":1}`), Events: []Event{
		start("stats", "web1", 1, at(0)), end("stats", "web1", 1, at(time.Minute), Success),
	}})
	select {
	case <-tr.Changed():
	default:
		t.Fatal("no change signalled")
	}
	c = tr.Changes()
	if c.Full || !slices.Equal(jobNames(c), []string{"stats"}) || c.Sources["runs"] == nil || string(c.Sources["runs"].Position) != `{"offset":1}` {
		t.Fatalf("changes %v %+v; want stats and the source's position", jobNames(c), c.Sources)
	}
	// The values taken are copies: later events do not change them.
	taken := c.Jobs["stats"]
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("stats", "web1", 2, at(2*time.Minute), Failure)}})
	if taken.RunCounts != [6]uint64{1, 0, 0, 0} || taken.Durations.Count != 1 {
		t.Fatalf("a later event changed a value taken before: %+v", taken)
	}
	if c := tr.Changes(); !slices.Equal(jobNames(c), []string{"stats"}) || c.Jobs["stats"].RunCounts != [6]uint64{1, 1, 0, 0} {
		t.Fatalf("second changes: %+v", c)
	}

	// A lost run (reaped) is a change of its job; a health change one of its
	// source.
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("backup", "host", 7, clock.now.Add(-29*time.Minute-30*time.Second))}})
	tr.SetHealth("runs", true, nil)
	tr.Changes()
	clock.Advance(time.Minute)
	tr.Reap()
	clock.Advance(time.Minute)
	tr.Reap()
	tr.SetHealth("runs", false, nil)
	if c := tr.Changes(); !slices.Equal(jobNames(c), []string{"backup"}) || c.Jobs["backup"].RunCounts[3] != 1 || c.Sources["runs"] == nil || c.Sources["runs"].Up {
		t.Fatalf("after a reap and a health change: %v %+v", jobNames(c), c)
	}

	// Why a source is down is shown, and a new reason is a change too;
	// back up, it has none.
	tr.SetHealth("runs", false, errors.New("no journal files in /var/log/journal"))
	if c := tr.Changes(); c.Sources["runs"] == nil || c.Sources["runs"].Reason != "no journal files in /var/log/journal" {
		t.Fatalf("after a reason: %+v", c.Sources["runs"])
	}
	tr.SetHealth("runs", true, nil)
	if c := tr.Changes(); c.Sources["runs"] == nil || !c.Sources["runs"].Up || c.Sources["runs"].Reason != "" {
		t.Fatalf("back up: %+v", c.Sources["runs"])
	}
}

// TestChangedOncePerChanges: a stream of batches signals Changed once until
// the saver takes the changes, and again after it did.
func TestChangedOncePerChanges(t *testing.T) {
	clock := &fakeClock{now: t0.Add(time.Hour)}
	tr := newTestTracker(clock, map[int]bool{})
	tr.Changes()
	signalled(tr.Changed())
	for round := range 3 {
		for i := range 5 {
			pid := 10*round + i
			tr.Apply(Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":1}`), Events: []Event{
				start("stats", "web1", pid, at(time.Duration(pid)*time.Minute)), end("stats", "web1", pid, at(time.Duration(pid)*time.Minute+time.Second), Success),
			}})
			if got, want := signalled(tr.Changed()), i == 0; got != want {
				t.Fatalf("round %d, batch %d: Changed signalled %v, want %v (once until Changes)", round, i, got, want)
			}
		}
		if c := tr.Changes(); c == nil || c.Jobs["stats"] == nil || c.Jobs["stats"].RunCounts[0] != uint64(5*(round+1)) {
			t.Fatalf("round %d: the changes hold %+v, want the five batches' runs", round, c)
		}
	}
}

func TestChangesOfReloads(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	tr.Changes()
	every := schedule.Every(time.Hour)
	tr.Configure([]JobSpec{{Name: "stats", Schedule: every}}, nil)
	c := tr.Changes()
	if !c.Full || !slices.Equal(jobNames(c), []string{"stats"}) || len(c.Sources) != 0 {
		t.Fatalf("after a reload: %+v", c)
	}
	// Removed, then configured again before a save: not removed.
	tr.Configure([]JobSpec{{Name: "stats", Schedule: every}, {Name: "new", Schedule: every}}, nil)
	tr.Configure([]JobSpec{{Name: "new", Schedule: every}}, nil)
	tr.Configure([]JobSpec{{Name: "stats", Schedule: every}}, nil)
	c = tr.Changes()
	var saved *Saved
	saved = saved.With(c)
	if got := saved.JobNames(); !slices.Equal(got, []string{"stats"}) {
		t.Fatalf("saved jobs %v after reloads", got)
	}
}

func TestMergeAndSavedWith(t *testing.T) {
	v := func(name string, runs uint64) *JobView {
		return &JobView{Spec: &JobSpec{Name: name}, JobState: &JobState{RunCounts: [6]uint64{runs}}}
	}
	full := &Changes{Full: true, Jobs: map[string]*JobView{"a": v("a", 1), "b": v("b", 1)}, Sources: map[string]*SourceView{"s": {Name: "s"}}}
	s1 := (*Saved)(nil).With(full)
	if got := s1.JobNames(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("names %v", got)
	}

	// A failed save of older, then newer: the merge holds both, the newest
	// value of each job, and no removed job.
	older := &Changes{Jobs: map[string]*JobView{"a": v("a", 2), "b": v("b", 2)}}
	newer := &Changes{Jobs: map[string]*JobView{"a": v("a", 3), "c": v("c", 1)}, RemovedJobs: []string{"b"}}
	m := older.Merge(newer)
	if len(m.Jobs) != 2 || m.Jobs["a"].RunCounts[0] != 3 || m.Jobs["c"] == nil || !slices.Equal(m.RemovedJobs, []string{"b"}) {
		t.Fatalf("merged: %+v", m)
	}
	if len(older.Jobs) != 2 || older.Jobs["a"].RunCounts[0] != 2 {
		t.Fatalf("Merge changed older: %+v", older)
	}
	// Removed and back again: present, not removed.
	back := m.Merge(&Changes{Jobs: map[string]*JobView{"b": v("b", 9)}})
	if back.Jobs["b"] == nil || len(back.RemovedJobs) != 0 {
		t.Fatalf("job back after removal: %+v", back)
	}

	s2 := s1.With(m)
	if got := s2.JobNames(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("names after removal %v", got)
	}
	jobs, srcs := s2.View()
	if len(jobs) != 2 || jobs[0].RunCounts[0] != 3 || len(srcs) != 1 {
		t.Fatalf("view %+v %+v", jobs, srcs)
	}
	// s1 is as it was: scrapes that hold it are undisturbed.
	if jobs, _ := s1.View(); len(jobs) != 2 || jobs[0].RunCounts[0] != 1 || jobs[1].Spec.Name != "b" {
		t.Fatalf("With changed the state it was given: %+v", jobs)
	}
	if s2.With(nil) != s2 {
		t.Fatal("With of no changes is not the same state")
	}
}

// A view shares the job's maps; the job copies them before it writes one,
// so the view keeps its counts while the model goes on.
func TestViewMapsKeepTheirCounts(t *testing.T) {
	clock := &fakeClock{now: at(time.Hour)}
	tr := newTestTracker(clock, nil)
	lost := Event{Kind: LockLost, Job: "stats", Host: "web1", PID: 1, Time: at(0), Lock: "redis"}
	sk := skip("stats", at(0))
	sk.SkipLabel = "locked"
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("stats", "web1", 1, at(0)), lost, end("stats", "web1", 1, at(time.Minute), Success), sk}})
	saved := tr.Changes().Jobs["stats"]
	live, _ := tr.View()
	check := func(what string, v *JobView) {
		t.Helper()
		var observed uint64
		for _, n := range v.Durations.Counts {
			observed += n
		}
		if v.RunCounts != [6]uint64{1, 0, 0, 0} || v.SkipsByReason()["locked"] != 1 || v.LockLost()["redis"] != 1 || observed != 1 {
			t.Errorf("%s changed: runs %v, skips %v, locks lost %v, durations %v", what, v.RunCounts, v.SkipCounts, v.LockLostCounts, v.Durations.Counts)
		}
	}
	for range 2 {
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("stats", "web1", 2, at(2*time.Minute)), lost, end("stats", "web1", 2, at(3*time.Minute), Failure), sk}})
		check("a saved view", saved)
		var v *JobView
		for i := range live {
			if live[i].Spec.Name == "stats" {
				v = &live[i]
			}
		}
		check("a live view", v)
	}
	if now := tr.Changes().Jobs["stats"]; now.RunCounts[1] != 2 || now.SkipsByReason()["locked"] != 3 || now.LockLost()["redis"] != 3 || now.Durations.Count != 3 {
		t.Errorf("the model: runs %v, skips %v, locks lost %v", now.RunCounts, now.SkipCounts, now.LockLostCounts)
	}
}

// A saved view shares its job's state; every kind of change the model
// makes (each event kind, a lost run, missed slots counted by the clock, a
// restore) is made on a copy, so views taken before keep their values.
func TestSavedViewsNeverChange(t *testing.T) {
	h := func(hh, mm int) time.Time { return time.Date(2026, 11, 30, hh, mm, 0, 0, time.UTC) }
	clock := &fakeClock{now: h(13, 30)} // the records below are not in the future
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(pid int) bool { return pid < 100 }, LostAfter: time.Second})
	tr.Configure([]JobSpec{
		{Name: "hourly", Schedule: grid{time.Hour}, Grace: time.Minute, Scope: "cluster", StaleMultiple: 2},
		{Name: "stats", Schedule: schedule.Every(time.Hour), Timeout: 2 * time.Hour, StaleMultiple: 2},
	}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true, LateWindow: time.Hour}}) // the rounds go back in time
	tr.SetHealth("runs", true, nil)
	dump := func(v *JobView) string {
		t.Helper()
		recent := make([]RecentRunFields, len(v.Recent))
		for i, r := range v.Recent {
			recent[i] = r.Fields()
		}
		b, err := json.Marshal(struct {
			*JobState
			Recent    []RecentRunFields
			Durations []float64
			Open      []Run
		}{v.JobState, recent, v.DurationHistory, v.Open})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type taken struct {
		v    *JobView
		dump string
	}
	var views []taken
	save := func() {
		for _, v := range tr.Changes().Jobs {
			views = append(views, taken{v, dump(v)})
		}
		live, _ := tr.View()
		for i := range live {
			views = append(views, taken{&live[i], dump(&live[i])})
		}
	}
	lost := func(job string, pid int, t time.Time) Event {
		return Event{Kind: LockLost, Job: job, Host: "a", PID: pid, Time: t, Lock: "redis"}
	}
	sk := func(job string, t time.Time, label string) Event {
		e := skip(job, t)
		e.SkipLabel = label
		return e
	}
	rounds := [][]Event{
		{start("hourly", "a", 1, h(10, 0)), start("stats", "a", 1, h(10, 0)), lost("hourly", 1, h(10, 1))},
		{end("hourly", "a", 1, h(10, 5), Success), end("stats", "a", 1, h(10, 5), Failure), sk("stats", h(10, 6), "locked")},
		// a double trigger, a second host, an overlap, a skip in a slot
		{start("hourly", "a", 2, h(10, 0)), start("hourly", "b", 3, h(10, 0)), start("stats", "a", 4, h(10, 7)), start("stats", "a", 5, h(10, 8))},
		{sk("hourly", h(11, 0), "disabled"), end("stats", "a", 4, h(10, 9), Timeout), lost("stats", 5, h(10, 9))},
		// a run on this host whose process is gone (pid 200), reaped below
		{start("hourly", "here", 200, h(13, 0)), start("stats", "here", 201, h(13, 0))},
	}
	for i, events := range rounds {
		tr.Apply(Batch{Source: "runs", AtEnd: i == len(rounds)-1, Events: events, Position: json.RawMessage(`{"offset":` + string(rune('1'+i)) + `}`)})
		save()
	}
	clock.now = h(16, 0) // past warm-up: slots 14:00 and 15:00 are missed
	tr.Reap()
	clock.Advance(time.Hour + 2*time.Second)
	tr.Reap() // the gone processes are lost now: decided past when they went (the window is an hour)
	save()
	tr.Restore(tr.Snapshot())
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("stats", "a", 5, h(16, 1), Success)}})
	save()
	tr.Reap()
	for i, v := range views {
		if got := dump(v.v); got != v.dump {
			t.Errorf("view %d of %s changed:\n was %s\n now %s", i, v.v.Spec.Name, v.dump, got)
		}
	}
	if j := jobView(t, tr, "hourly"); j.Missed < 2 || j.DupCounts == [3]uint64{} || j.RunCounts[3] == 0 {
		t.Errorf("hourly: missed %d, duplicates %v, runs %v: the rounds did not make the changes they are for", j.Missed, j.DupCounts, j.RunCounts)
	}
}

// The count arrays are indexed by their names' lists: a name added to a
// list needs its array grown.
func TestCountArraysMatchTheirNames(t *testing.T) {
	var j JobState
	for _, c := range []struct {
		what   string
		counts int
		names  int
	}{
		{"RunCounts/Results", len(j.RunCounts), len(Results)},
		{"SkipCounts/SkipReasons", len(j.SkipCounts), len(SkipReasons)},
		{"LockLostCounts/LockLayers", len(j.LockLostCounts), len(LockLayers)},
		{"DupCounts/DuplicateKinds", len(j.DupCounts), len(DuplicateKinds)},
	} {
		if c.counts != c.names {
			t.Errorf("%s: %d counts for %d names", c.what, c.counts, c.names)
		}
	}
}
