package model

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/schedule"
)

// steppedClock is the real clock with its wall clock stepped: time.Now()
// with the wall reading moved by offset and the monotonic reading kept, as
// a step of CLOCK_REALTIME leaves CLOCK_MONOTONIC alone. Go's API moves
// both readings together (Time.Add), so the monotonic one is copied back
// into place; stepWall checks that it did what it says.
type steppedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return stepWall(time.Now(), c.offset)
}

func (c *steppedClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// timeLayout is time.Time's: with a monotonic reading, ext holds it.
type timeLayout struct {
	wall uint64
	ext  int64
}

// stepWall returns now with its wall reading moved by d and its monotonic
// reading kept.
func stepWall(now time.Time, d time.Duration) time.Time {
	t := now.Add(d)
	(*timeLayout)(unsafe.Pointer(&t)).ext = (*timeLayout)(unsafe.Pointer(&now)).ext
	return t
}

// TestStepWall: stepWall's times are what a step of the real clock gives:
// Go's comparisons (which use the monotonic readings) see no step, the
// wall readings (Round(0)) see it.
func TestStepWall(t *testing.T) {
	now := time.Now()
	s := stepWall(now, -2*time.Minute)
	if s.Sub(now) != 0 || s.Before(now) || !s.Equal(now) {
		t.Fatalf("the monotonic reading moved: %v against %v (time.Time's layout changed?)", s, now)
	}
	if d := s.Round(0).Sub(now.Round(0)); d != -2*time.Minute {
		t.Fatalf("the wall reading moved by %s, want -2m (time.Time's layout changed?)", d)
	}
}

// TestClockStepsRealTime: steps of this host's clock, on real time.Now()
// values (the monotonic reading present, as jobwatch reads them). After a
// step back of 120 s the model's now does not go back, the step is
// counted, the records the job writes after it (dated by the stepped
// clock) are this host's present: every run a success, none late or lost,
// the last success just now, never stale; a job that stops at the step is
// stale after its stale_multiple periods of real time, not 120 s later. A
// forward step is taken as it comes. (Compare the wall clock's readings
// with Before again, on monotonic readings, and it fails.)
func TestClockStepsRealTime(t *testing.T) {
	clock := &steppedClock{}
	tr := New(Options{Host: "here", Now: clock.Now, Mono: ProcessMono, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{
		{Name: "going", Schedule: schedule.Every(5 * time.Second), Timeout: 3 * time.Second, StaleMultiple: 2},
		{Name: "stopped", Schedule: schedule.Every(time.Second), StaleMultiple: 2},
	}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	pid := 100
	run := func(job string) {
		pid++
		// As the job's records say it, read at once.
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start(job, "here", pid, clock.Now().Round(0))}})
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end(job, "here", pid, clock.Now().Round(0), Success)}})
	}
	run("going")
	run("stopped")
	before := tr.Now()
	clock.Step(-120 * time.Second)
	stepped := tr.Now()
	if stepped.Before(before) {
		t.Fatalf("the model's now went back with the wall clock: %s after %s", stepped, before)
	}
	if steps := tr.ClockSteps(); steps != [2]uint64{0, 1} {
		t.Fatalf("steps forward, backward: %v, want [0 1]", steps)
	}
	for i := range 5 {
		run("going")
		tr.Reap()
		now := tr.Now()
		j := jobView(t, tr, "going")
		w := j.Watch(now)
		if w.Stale || w.SinceSuccess > time.Second || j.LastSuccess.Before(stepped) {
			t.Fatalf("run %d after the step: since success %s, stale %v, last success %s (now %s)", i, w.SinceSuccess, w.Stale, j.LastSuccess, now)
		}
		if j.RunCounts[0] != uint64(i+2) || j.RunCounts[3] != 0 || j.ConsecutiveFailures != 0 {
			t.Fatalf("run %d after the step: successes %d lost %d failures in a row %d", i, j.RunCounts[0], j.RunCounts[3], j.ConsecutiveFailures)
		}
	}
	if _, srcs := tr.View(); srcs[0].LateRecords != 0 {
		t.Fatalf("%d late records: this host's records after the step were taken for the past", srcs[0].LateRecords)
	}
	// The job that stopped: stale after two seconds of real time, whatever
	// the step (before the step was taken, 122 s).
	began := time.Now()
	testproc.Eventually(t, 30*time.Second, "the stopped job stale", func() error {
		tr.Reap()
		j := jobView(t, tr, "stopped")
		if w := j.Watch(tr.Now()); !w.Stale {
			return fmt.Errorf("not stale, since success %s", w.SinceSuccess)
		}
		return nil
	})
	if waited := time.Since(began); waited > 20*time.Second {
		t.Errorf("stale after %s", waited)
	}

	wall := clock.Now().Round(0)
	clock.Step(time.Hour)
	if now := tr.Now(); now.Sub(wall) < 59*time.Minute || now.Sub(wall) > 61*time.Minute {
		t.Errorf("after a step of 1h forward (the 2m back taken back first): now %s, the wall before %s", now, wall)
	}
	if steps := tr.ClockSteps(); steps != [2]uint64{1, 1} {
		t.Fatalf("steps forward, backward: %v, want [1 1]", steps)
	}
}

// TestHostTimeEras: which of this host's records a step back moves on, on
// a driven clock: those dated from the stepped clock's first reading on
// (less the time since the reading before), not those dated after the
// stepped clock's now (written before the step, read after it), nor those
// of other hosts; a second step adds to the first; a restart with the wall
// clock behind the saved state takes it for a step.
func TestHostTimeEras(t *testing.T) {
	wall := oracleStart
	var mono time.Duration
	c := &steadyClock{wall: func() time.Time { return wall }, mono: func() time.Duration { return mono }, logger: discard}
	c.now()
	step := func(wallBy, monoBy time.Duration) {
		wall, mono = wall.Add(wallBy), mono+monoBy
		c.now()
	}
	step(time.Second, time.Second)                // 8:00:01, no step
	step(-2*time.Minute+time.Second, time.Second) // a step back of 2m: 7:58:02
	cases := []struct {
		name string
		at   time.Time
		want time.Duration
	}{
		{"long before the step", oracleStart.Add(-time.Hour), 0},
		{"written after the step", oracleStart.Add(-118 * time.Second), 2 * time.Minute},
		{"written after the step, a second before the reading", oracleStart.Add(-119 * time.Second), 2 * time.Minute},
		{"written before the step, dated after the stepped clock", oracleStart.Add(time.Second), 0},
	}
	for _, tc := range cases {
		if got := c.hostTime(tc.at).Sub(tc.at); got != tc.want {
			t.Errorf("%s (%s): moved by %s, want %s", tc.name, tc.at.Format(time.TimeOnly), got, tc.want)
		}
	}
	step(-time.Minute+time.Second, time.Second) // another minute back: 7:57:03
	at := wall.Add(-100 * time.Millisecond)
	if got := c.hostTime(at).Sub(at); got != 3*time.Minute {
		t.Errorf("after a second step back: moved by %s, want 3m", got)
	}
	if now := c.now(); !now.Equal(oracleStart.Add(3 * time.Second)) {
		t.Errorf("now %s, want %s: three seconds have passed", now, oracleStart.Add(3*time.Second))
	}

	// A restart: the wall clock 10 minutes behind the saved state.
	wall = oracleStart.Add(-10 * time.Minute)
	c = &steadyClock{wall: func() time.Time { return wall }, mono: func() time.Duration { return mono }, logger: discard}
	c.now()
	c.atLeast(oracleStart)
	wall, mono = wall.Add(time.Second), mono+time.Second
	if now := c.now(); !now.Equal(oracleStart.Add(time.Second)) || c.stepCounts() != [2]uint64{0, 1} {
		t.Errorf("after a restart behind the state: now %s, steps %v; want %s, [0 1]", now, c.stepCounts(), oracleStart.Add(time.Second))
	}
	if got := c.hostTime(wall).Sub(wall); got != 10*time.Minute {
		t.Errorf("a record after the restart: moved by %s, want 10m", got)
	}
}

var discard = slog.New(slog.DiscardHandler)

// TestClockStepForward: a step forward of this host's clock (a suspended
// VM resumed, an NTP correction) is taken as it comes, on real time.Now()
// values: a minutely job that ran just before a 10-minute step is 600 s
// without success at once, stale (stale_multiple 2), and the slots in the
// jump are missed once its source's watermark has passed them
// (docs/faults.md, "Clock steps", gives these figures).
func TestClockStepForward(t *testing.T) {
	clock := &steppedClock{}
	// The step lands 30 s after a minute, so that the slots are whole.
	wall := clock.Now().Round(0)
	clock.Step(wall.Truncate(time.Minute).Add(time.Minute + 30*time.Second).Sub(wall))
	tr := New(Options{Host: "here", Now: clock.Now, Mono: ProcessMono, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "minutely", Schedule: grid{time.Minute}, Grace: 20 * time.Second, StaleMultiple: 2}},
		[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	at := clock.Now().Round(0)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("minutely", "here", 1, at.Add(-time.Second)), end("minutely", "here", 1, at, Success)}})
	tr.Reap()
	clock.Step(10 * time.Minute)
	tr.Reap()
	j := jobView(t, tr, "minutely")
	w := j.Watch(tr.Now())
	if w.SinceSuccess < 10*time.Minute || w.SinceSuccess > 10*time.Minute+5*time.Second || !w.Stale || j.Missed != 10 {
		t.Fatalf("after a step of 10m forward: since success %s, stale %v, missed %d; want 10m, true, 10", w.SinceSuccess, w.Stale, j.Missed)
	}
	if steps := tr.ClockSteps(); steps != [2]uint64{1, 0} {
		t.Fatalf("steps forward, backward: %v, want [1 0]", steps)
	}
}
