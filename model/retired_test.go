package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// A discovered job that disappears is retired: kept with its history, its
// spec without schedule, so nothing is missed or stale; records that still
// come count; back, it is expected from then on, its history going on.
// A configured job removed is dropped, as before.
func TestRetiredJob(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	cron, err := schedule.ParseCron("0 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	specs := []JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "hourly", Schedule: cron, Grace: time.Minute, StaleMultiple: 1, Discovered: true},
	}
	srcs := []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}}
	tr.Configure(specs, srcs)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("hourly", "web1", 1, at(0)), end("hourly", "web1", 1, at(time.Minute), Failure),
		end("stats", "web1", 2, at(time.Minute), Success),
	}})
	clock.Advance(3 * time.Hour)
	tr.Reap()
	before := jobView(t, tr, "hourly")
	if before.Missed == 0 || before.ConsecutiveMissed == 0 || before.RunCounts[1] != 1 {
		t.Fatalf("hourly watched: %+v, want its failure and the runs it missed", before.JobState)
	}

	retiredAt := clock.now
	tr.Configure(specs[:1], srcs)
	j := jobView(t, tr, "hourly")
	if j.Retired.IsZero() || j.Spec.Schedule != nil || j.Spec.StaleMultiple != 0 || j.RunCounts != before.RunCounts {
		t.Fatalf("hourly retired: %+v %+v, want its counts kept, no schedule", j.Spec, j.JobState)
	}
	if w := j.Watch(clock.now.Add(48 * time.Hour)); w.Stale || !w.Deadline.IsZero() || w.Period != 0 {
		t.Errorf("a retired job watched: %+v, want nothing expected", w)
	}
	// Two days gone: nothing missed; a record that comes counts.
	clock.Advance(48 * time.Hour)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("hourly", "web1", 3, clock.now.Add(-time.Minute), Success)}})
	tr.Reap()
	j = jobView(t, tr, "hourly")
	if j.Missed != before.Missed || j.RunCounts[0] != 1 || !j.Retired.Equal(retiredAt) {
		t.Errorf("retired for two days: missed %d (was %d), successes %d, retired %v; want nothing missed, the record counted, retired at %v",
			j.Missed, before.Missed, j.RunCounts[0], j.Retired, retiredAt)
	}

	// Back: expected from now, with its history.
	clock.Advance(10 * time.Minute)
	back := clock.now
	tr.Configure(specs, srcs)
	tr.Apply(Batch{Source: "runs", AtEnd: true}) // the source read to its end again
	tr.Reap()
	j = jobView(t, tr, "hourly")
	if !j.Retired.IsZero() || !j.Resumed.Equal(back) || j.Spec.Schedule == nil || j.Missed != before.Missed || j.ConsecutiveMissed != 0 || j.RunCounts[1] != 1 {
		t.Fatalf("hourly back: %+v, want watched again since %v with its history and nothing missed while it was gone", j.JobState, back)
	}
	if w := j.Watch(back.Add(30 * time.Minute)); w.Stale {
		t.Errorf("hourly stale right after it came back: %+v", w)
	}
	clock.Advance(3 * time.Hour)
	tr.Reap()
	if j = jobView(t, tr, "hourly"); j.Missed != before.Missed+3 {
		t.Errorf("3 hours after it came back: missed %d, want %d: the slots since it is expected again", j.Missed, before.Missed+3)
	}

	// A configured job removed is dropped.
	tr.Configure(specs[1:], srcs)
	if c := tr.Changes(); c.Jobs["stats"] != nil || len(c.Jobs) != 1 {
		t.Errorf("stats removed from the config: %v still watched", jobNames(c))
	}
}

// A retired job is forgotten once the retention has passed since it was
// retired, and kept before.
func TestRetiredRetention(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	tr.SetRetiredRetention(7 * 24 * time.Hour)
	srcs := []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}}
	tr.Configure([]JobSpec{{Name: "gone", Schedule: schedule.Every(time.Hour), Discovered: true}}, srcs)
	tr.Configure(nil, srcs)
	tr.Changes()
	clock.Advance(7 * 24 * time.Hour)
	tr.Reap()
	if jobs, _ := tr.View(); len(jobs) != 1 {
		t.Fatalf("%d jobs at the retention, want the retired one kept", len(jobs))
	}
	clock.Advance(time.Second)
	tr.Reap()
	if jobs, _ := tr.View(); len(jobs) != 0 {
		t.Fatalf("%d jobs past the retention, want none", len(jobs))
	}
	if c := tr.Changes(); c == nil || len(c.RemovedJobs) != 1 || c.RemovedJobs[0] != "gone" {
		t.Errorf("changes after forgetting: %+v, want gone removed", c)
	}
}

// Restore retires a saved discovered job that is not configured (gone
// while jobwatch was stopped), keeps one retired before, takes one back
// that is configured again, and drops a job of the config no longer in it.
func TestRestoreRetired(t *testing.T) {
	clock := &fakeClock{now: t0}
	old := newTestTracker(clock, nil)
	srcs := []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}}
	every := schedule.Every(time.Hour)
	old.Configure([]JobSpec{{Name: "kept", Schedule: every}, {Name: "removed", Schedule: every},
		{Name: "gone", Schedule: every, Discovered: true}, {Name: "retired", Schedule: every, Discovered: true},
		{Name: "back", Schedule: every, Discovered: true}}, srcs)
	old.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("gone", "a", 1, at(0), Success), end("back", "a", 2, at(0), Success)}})
	clock.Advance(time.Hour)
	old.Configure([]JobSpec{{Name: "kept", Schedule: every}, {Name: "removed", Schedule: every}, {Name: "gone", Schedule: every, Discovered: true}}, srcs)
	snap := old.Snapshot()

	clock.Advance(time.Hour)
	tr := New(Options{Host: "here", StartupHold: NoStartupHold, Now: clock.Now})
	tr.Configure([]JobSpec{{Name: "kept", Schedule: every}, {Name: "back", Schedule: every, Discovered: true}}, srcs)
	if err := tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	got := map[string]JobView{}
	jobs, _ := tr.View()
	for _, j := range jobs {
		got[j.Spec.Name] = j
	}
	if _, ok := got["removed"]; ok || len(got) != 4 {
		t.Errorf("restored %v, want kept, gone, retired and back", got)
	}
	if j := got["gone"]; j.JobState == nil || !j.Retired.Equal(clock.now) || j.RunCounts[0] != 1 || j.Spec.Schedule != nil {
		t.Errorf("gone while stopped: %+v, want retired now with its run", j)
	}
	if j := got["retired"]; j.JobState == nil || !j.Retired.Equal(at(time.Hour)) {
		t.Errorf("retired before: %+v, want retired then", j)
	}
	if j := got["back"]; j.JobState == nil || !j.Retired.IsZero() || !j.Resumed.Equal(clock.now) || j.RunCounts[0] != 1 || j.Spec.Schedule == nil {
		t.Errorf("back: %+v, want watched again with its run", j)
	}
}
