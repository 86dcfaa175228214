package model

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// pauseRig is a minutely cron job (grace 30s, stale after 2 expected runs)
// reported by one source, on a fake clock stepped 10 s at a time.
type pauseRig struct {
	t     *testing.T
	clock *fakeClock
	tr    *Tracker
	src   string
	pid   int
}

func newPauseRig(t *testing.T, spec JobSpec, src SourceSpec) *pauseRig {
	t.Helper()
	minutely, err := schedule.ParseCron("* * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	spec.Name, spec.Schedule, spec.Grace, spec.StaleMultiple = "job", minutely, 30*time.Second, 2
	r := &pauseRig{t: t, clock: &fakeClock{now: t0}, src: src.Name}
	r.tr = New(Options{Host: "here", Now: r.clock.Now, StartupHold: NoStartupHold})
	r.tr.Configure([]JobSpec{spec}, []SourceSpec{src})
	r.tr.SetHealth(src.Name, true, nil)
	return r
}

// until steps the clock to d after t0, a run of 5 s at each minute for
// which ran says so, and calls each at every step.
func (r *pauseRig) until(d time.Duration, ran func(minute int) bool, each func()) {
	r.t.Helper()
	for r.clock.now.Before(at(d)) {
		r.clock.Advance(10 * time.Second)
		now := r.clock.now
		var evs []Event
		minute := int(now.Sub(t0) / time.Minute)
		switch now.Sub(t0) % time.Minute {
		case 0:
			if ran(minute) {
				r.pid++
				evs = append(evs, start("job", "here", 1000+r.pid, now))
			}
		case 10 * time.Second:
			if ran(minute) {
				evs = append(evs, end("job", "here", 1000+r.pid, now.Add(-5*time.Second), Success))
			}
		}
		r.tr.Apply(Batch{Source: r.src, AtEnd: true, Events: evs})
		r.tr.Reap()
		if each != nil {
			each()
		}
	}
}

func (r *pauseRig) view() JobView { r.t.Helper(); return jobView(r.t, r.tr, "job") }

func runLog() SourceSpec { return SourceSpec{Name: "runs", Type: "runlog", Runs: true} }

func between(lo, hi int) func(int) bool {
	return func(m int) bool { return m < lo || m >= hi }
}

// A job paused from 1:30 to 4:30 that does not run from minute 2 to 5:
// its slots 2, 3 and 4 are unjudged (paused), never missed; slot 5, after
// the pause, is missed. It is never stale: while paused, and after, when
// it is judged from the pause's end.
func TestPauseUnjudgesSlots(t *testing.T) {
	r := newPauseRig(t, JobSpec{}, runLog())
	r.until(90*time.Second, between(2, 6), nil)
	if _, err := r.tr.Pause("job", Pause{Until: at(4*time.Minute + 30*time.Second), Reason: "db upgrade"}); err != nil {
		t.Fatal(err)
	}
	r.until(10*time.Minute, between(2, 6), func() {
		v := r.view()
		if w := v.Watch(r.clock.now); w.Stale {
			t.Fatalf("at %s: stale (deadline %s)", r.clock.now.Sub(t0), w.Deadline.Sub(t0))
		}
		inPause := r.clock.now.Before(at(4*time.Minute + 30*time.Second))
		if got := v.Pauses.Why() == UnjudgedPaused; got != inPause {
			t.Fatalf("at %s: paused %v, want %v", r.clock.now.Sub(t0), got, inPause)
		}
	})
	v := r.view()
	if v.Missed != 1 || v.Pauses.Unjudged != [3]uint64{3, 0, 0} {
		t.Errorf("missed %d, unjudged %v; want 1, [3 0 0]", v.Missed, v.Pauses.Unjudged)
	}
	if !v.Pauses.PauseEnded.Equal(at(4*time.Minute+30*time.Second)) || len(v.Pauses.Excused) != 0 {
		t.Errorf("pause ended %v, excused %v: want 4:30 and none left", v.Pauses.PauseEnded.Sub(t0), v.Pauses.Excused)
	}
}

// A pause until healthy ends at the job's next success: the slots before
// it are unjudged, and a slot after it without a run is missed.
func TestPauseUntilHealthy(t *testing.T) {
	r := newPauseRig(t, JobSpec{}, runLog())
	ran := func(m int) bool { return m < 2 || m == 5 }
	r.until(90*time.Second, ran, nil)
	if _, err := r.tr.Pause("job", Pause{UntilHealthy: true}); err != nil {
		t.Fatal(err)
	}
	r.until(5*time.Minute, ran, func() {
		if v := r.view(); v.Watch(r.clock.now).Stale || !v.Watch(r.clock.now).Deadline.IsZero() {
			w := v.Watch(r.clock.now)
			t.Fatalf("at %s: stale %v, deadline %v; want neither while paused until healthy", r.clock.now.Sub(t0), w.Stale, w.Deadline)
		}
	})
	r.until(7*time.Minute, ran, nil)
	v := r.view()
	if v.Pauses.Why() != "" || !v.Pauses.PauseEnded.Equal(at(5*time.Minute+5*time.Second)) {
		t.Errorf("paused %q, ended %v: want resumed at the success's end, 5:05", v.Pauses.Why(), v.Pauses.PauseEnded.Sub(t0))
	}
	if v.Missed != 1 || v.Pauses.Unjudged[0] != 3 {
		t.Errorf("missed %d, unjudged %v; want 1 (slot 6), 3 paused (2, 3, 4)", v.Missed, v.Pauses.Unjudged)
	}
}

// A fixed-period job paused for ten minutes is judged from the resume:
// stale two periods and grace after it, not at once.
func TestResumeJudgesFromTheResume(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold})
	tr.Configure([]JobSpec{{Name: "job", Schedule: schedule.Every(time.Minute), StaleMultiple: 2}}, []SourceSpec{runLog()})
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("job", "here", 1, at(0), Success)}})
	if _, err := tr.Pause("job", Pause{Reason: "moving hosts"}); err != nil {
		t.Fatal(err)
	}
	stale := func(d time.Duration) bool {
		clock.now = at(d)
		tr.Reap()
		v := jobView(t, tr, "job")
		return v.Watch(clock.now).Stale
	}
	if stale(10 * time.Minute) {
		t.Fatal("stale while paused")
	}
	if err := tr.Resume("job"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Resume("job"); !errors.Is(err, ErrNotPaused) {
		t.Errorf("a second resume: %v, want ErrNotPaused", err)
	}
	if stale(11*time.Minute) || stale(12*time.Minute) {
		t.Error("stale within two periods of the resume")
	}
	if !stale(12*time.Minute + time.Second) {
		t.Error("not stale two periods after the resume")
	}
	if _, err := tr.Pause("nosuch", Pause{}); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("pause of an unknown job: %v, want ErrUnknownJob", err)
	}
	if _, err := tr.Pause("job", Pause{Until: at(time.Minute)}); err == nil {
		t.Error("a pause until a time past was taken")
	}
}

// A maintenance window at minute 5 of each hour, 3 minutes long: the job
// does not run in it; slots 5, 6 and 7 are unjudged (maintenance), slot 8
// after it is missed; paused (maintenance) while the window is open, and
// never stale.
func TestMaintenanceWindow(t *testing.T) {
	hourly, err := schedule.ParseCron("5 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	r := newPauseRig(t, JobSpec{Maintenance: []Window{{Schedule: hourly, Duration: 3 * time.Minute}}}, runLog())
	r.until(12*time.Minute, between(5, 9), func() {
		v := r.view()
		if w := v.Watch(r.clock.now); w.Stale {
			t.Fatalf("at %s: stale", r.clock.now.Sub(t0))
		}
		open := !r.clock.now.Before(at(5*time.Minute)) && r.clock.now.Before(at(8*time.Minute))
		if got := v.Pauses.Why() == UnjudgedMaintenance; got != open {
			t.Fatalf("at %s: in maintenance %v, want %v", r.clock.now.Sub(t0), got, open)
		}
		if open && !v.Pauses.Until().Equal(at(8*time.Minute)) {
			t.Fatalf("window until %v, want 8:00", v.Pauses.Until().Sub(t0))
		}
	})
	v := r.view()
	if v.Missed != 1 || v.Pauses.Unjudged != [3]uint64{0, 3, 0} {
		t.Errorf("missed %d, unjudged %v; want 1, [0 3 0]", v.Missed, v.Pauses.Unjudged)
	}
	if !v.Pauses.PauseEnded.Equal(at(8 * time.Minute)) {
		t.Errorf("window ended %v, want 8:00", v.Pauses.PauseEnded.Sub(t0))
	}
}

// jobwatch stopped from 3:35 to 9:10: the slots 4 to 9 had no run. A job
// reported by check-ins alone could not report them: unknown, not missed.
// One read from a run log would have logged them: missed.
func TestDowntimeIsUnknownForCheckins(t *testing.T) {
	for _, tc := range []struct {
		name        string
		src         SourceSpec
		missed, unk uint64
	}{
		{"check-ins", SourceSpec{Name: "checkin", Type: "checkin", Runs: true, Live: true}, 0, 6},
		{"run log", runLog(), 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPauseRig(t, JobSpec{}, tc.src)
			ran := func(m int) bool { return m < 4 || m > 9 }
			r.until(3*time.Minute+35*time.Second, ran, nil)
			snap := r.tr.Snapshot()
			snap.Written = r.clock.now
			r.clock.now = at(9*time.Minute + 10*time.Second)
			spec := *r.view().Spec
			r.tr = New(Options{Host: "here", Now: r.clock.Now, StartupHold: NoStartupHold})
			r.tr.Configure([]JobSpec{spec}, []SourceSpec{tc.src})
			if err := r.tr.Restore(snap); err != nil {
				t.Fatal(err)
			}
			r.tr.SetHealth(tc.src.Name, true, nil)
			r.until(12*time.Minute, ran, nil)
			v := r.view()
			if v.Missed != tc.missed || v.Pauses.UnjudgedCounts()[2] != tc.unk {
				t.Errorf("missed %d, unknown %d; want %d, %d", v.Missed, v.Pauses.UnjudgedCounts()[2], tc.missed, tc.unk)
			}
		})
	}
}

// A pause is saved with the job: restored, the job is still paused, and
// its slots are still unjudged.
func TestPauseSurvivesRestore(t *testing.T) {
	r := newPauseRig(t, JobSpec{}, runLog())
	r.until(90*time.Second, between(2, 100), nil)
	if _, err := r.tr.Pause("job", Pause{Reason: "migrating"}); err != nil {
		t.Fatal(err)
	}
	snap := r.tr.Snapshot()
	spec := *r.view().Spec
	r.tr = New(Options{Host: "here", Now: r.clock.Now, StartupHold: NoStartupHold})
	r.tr.Configure([]JobSpec{spec}, []SourceSpec{runLog()})
	if err := r.tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	r.tr.SetHealth("runs", true, nil)
	r.until(6*time.Minute, between(2, 100), nil)
	v := r.view()
	if v.Pauses.Why() != UnjudgedPaused || v.Pauses.Pause.Reason != "migrating" || v.Missed != 0 || v.Pauses.Unjudged[0] != 4 {
		t.Errorf("paused %q (%q), missed %d, unjudged %v; want paused, 0 missed, 4 unjudged", v.Pauses.Why(), v.Pauses.Pause.Reason, v.Missed, v.Pauses.Unjudged)
	}
}

// A job that missed runs before it is paused does not page for them while
// paused: the pause forgives the runs in a row missed, and the ones in the
// pause add none.
func TestPauseForgivesMissedRunsInARow(t *testing.T) {
	r := newPauseRig(t, JobSpec{}, runLog())
	r.until(3*time.Minute+45*time.Second, between(2, 100), nil)
	if v := r.view(); v.ConsecutiveMissed != 2 {
		t.Fatalf("%d missed in a row before the pause, want 2 (slots 2 and 3)", v.ConsecutiveMissed)
	}
	if _, err := r.tr.Pause("job", Pause{}); err != nil {
		t.Fatal(err)
	}
	r.until(8*time.Minute, between(2, 100), func() {
		if v := r.view(); v.ConsecutiveMissed != 0 || v.Watch(r.clock.now).Stale {
			t.Fatalf("at %s: %d missed in a row, stale %v; want neither while paused", r.clock.now.Sub(t0), v.ConsecutiveMissed, v.Watch(r.clock.now).Stale)
		}
	})
	if v := r.view(); v.Missed != 2 || v.Pauses.Unjudged[0] != 4 {
		t.Errorf("missed %d, unjudged %v; want the 2 before the pause, 4 in it", v.Missed, v.Pauses.Unjudged)
	}
}

// A view shares its job's state and so its Pauses: each change of them
// (a pause, a resume, a pause's end, a window opening and closing, slots
// unjudged, spans pruned) is made on the job's own copy, and every view
// taken before keeps the pauses it had.
func TestSavedViewsKeepTheirPauses(t *testing.T) {
	hourly, err := schedule.ParseCron("5 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	r := newPauseRig(t, JobSpec{Maintenance: []Window{{Schedule: hourly, Duration: 3 * time.Minute}}}, runLog())
	type taken struct {
		at   time.Duration
		v    *JobView
		dump string
	}
	dump := func(v *JobView) string {
		b, err := json.Marshal(v.Pauses)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var views []taken
	save := func() {
		if c := r.tr.Changes(); c != nil && c.Jobs["job"] != nil {
			v := c.Jobs["job"]
			views = append(views, taken{r.clock.now.Sub(t0), v, dump(v)})
		}
		v := r.view()
		views = append(views, taken{r.clock.now.Sub(t0), &v, dump(&v)})
	}
	ran := between(2, 10)
	r.until(90*time.Second, ran, save)
	if _, err := r.tr.Pause("job", Pause{Until: at(3 * time.Minute), Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	save()
	if _, err := r.tr.Pause("job", Pause{Until: at(4 * time.Minute), Reason: "longer"}); err != nil {
		t.Fatal(err)
	}
	save()
	r.until(9*time.Minute, ran, save) // the pause ends at 4:00, the window is open from 5:00 to 8:00
	if _, err := r.tr.Pause("job", Pause{Reason: "again"}); err != nil {
		t.Fatal(err)
	}
	save()
	r.until(10*time.Minute, ran, save)
	if err := r.tr.Resume("job"); err != nil {
		t.Fatal(err)
	}
	save()
	r.until(13*time.Minute, ran, save)
	for _, v := range views {
		if got := dump(v.v); got != v.dump {
			t.Errorf("the view taken at %s changed:\n was %s\n now %s", v.at, v.dump, got)
		}
	}
	if v := r.view(); v.Pauses.Unjudged[0] == 0 || v.Pauses.Unjudged[1] == 0 || v.Pauses.PauseEnded.IsZero() {
		t.Errorf("pauses %+v: the steps did not make the changes they are for", v.Pauses)
	}
	if len(views) == 0 || views[0].v.Pauses != nil {
		t.Errorf("a job never paused has pauses: %+v", views[0].v.Pauses)
	}
}
