package model

import (
	"log/slog"
	"sync"
	"time"
)

// This host's clock. The model's now is the wall clock plus an offset
// that steps of the wall clock change: a step back adds its size (the
// model's now never goes back, and goes on at the pace of the monotonic
// clock), a step forward takes back what it can of the offset and moves
// now on by the rest. A step is seen by comparing how far the wall clock
// moved between two readings with how far the monotonic clock did, on
// wall readings alone: time.Now() values carry a monotonic reading, and
// Go compares those when both times have one, so a wall step compared
// with Before is invisible (Round(0) strips it).
//
// This host's records are stamped by the same stepped clock: read after a
// step back, they are this host's present, not the past, and are moved
// onto the model's time by the offset of the era they were written in
// (hostTime). docs/faults.md, "Clock steps".

const (
	// stepMin is the least difference between the wall clock's and the
	// monotonic clock's progress that counts as a step: NTP slews at most
	// 500 ppm, 0.5 ms a second.
	stepMin = time.Second
	// hostSlack is how far after the wall clock's latest reading a record
	// of this host may be dated and still be of the current era (a record
	// is written before it is read, by the same clock).
	hostSlack = time.Second
	// maxEras bounds the eras kept for hostTime: the first (before any
	// step) and the latest maxEras-1.
	maxEras = 16
)

// ClockDirection names a step's direction, as jobwatch_clock_steps_total's
// label says it.
var ClockDirection = [2]string{"forward", "backward"}

// steadyClock is the model's now (see above).
type steadyClock struct {
	mu     sync.Mutex // scrapes read it beside the tracker's lock
	wall   func() time.Time
	mono   func() time.Duration
	logger *slog.Logger
	// read: lastWall (a wall reading, no monotonic reading) and lastMono
	// are the latest readings.
	read     bool
	lastWall time.Time
	lastMono time.Duration
	last     time.Time     // the latest now given, or the floor atLeast set
	offset   time.Duration // now less the wall clock, at least 0
	// eras are the wall clock's spans between steps that changed the
	// offset, oldest first; none before the first.
	eras  []clockEra
	steps [2]uint64 // by ClockDirection
}

// clockEra is a span of the wall clock between two steps: the wall
// readings a record written in it may have (from, until; until is zero for
// the current era) and the offset that moves them onto the model's time.
type clockEra struct {
	from, until time.Time
	offset      time.Duration
}

func (c *steadyClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, m := c.wall().Round(0), c.mono()
	if c.read {
		elapsed := m - c.lastMono
		if drift := w.Sub(c.lastWall) - elapsed; drift >= stepMin || drift <= -stepMin {
			c.stepped(w, elapsed, drift)
		}
	}
	c.read, c.lastWall, c.lastMono = true, w, m
	now := w.Add(c.offset)
	if now.Before(c.last) { // a step under stepMin, or the floor
		now = c.last
	}
	c.last = now
	return now
}

// stepped takes a step of drift (negative: back) seen at the wall reading
// w, elapsed after the reading before.
func (c *steadyClock) stepped(w time.Time, elapsed, drift time.Duration) {
	dir := 0
	if drift < 0 {
		dir = 1
	}
	c.steps[dir]++
	before := c.offset
	c.offset = max(c.offset-drift, 0)
	c.logger.Warn("the host's clock stepped", "direction", ClockDirection[dir], "step", drift.Round(time.Millisecond).String(), "wall", w, "offset", c.offset.String())
	if c.offset != before {
		// A record written after the step is dated from w less elapsed
		// on (the step may have come just after the reading before);
		// one written before it up to the old clock's now.
		c.newEra(w.Add(-elapsed), c.lastWall.Add(elapsed))
	}
}

// newEra starts an era at the wall reading from, the current one ending
// at until.
func (c *steadyClock) newEra(from, until time.Time) {
	if len(c.eras) == 0 {
		c.eras = append(c.eras, clockEra{}) // before any step: offset 0
	}
	c.eras[len(c.eras)-1].until = until
	c.eras = append(c.eras, clockEra{from: from, offset: c.offset})
	if len(c.eras) > maxEras {
		c.eras = append(c.eras[:1], c.eras[2:]...)
	}
}

// hostTime moves the time of a record of this host onto the model's time:
// by the offset of the latest era whose span holds it (the current era's
// ends hostSlack after the wall clock's latest reading). A record of the
// current era's span written before the step that began it would have
// been read more than the step's size after it was written: live sources
// read in seconds. A record no era holds takes the current offset.
func (c *steadyClock) hostTime(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.eras)
	if n == 0 {
		return t
	}
	for i := n - 1; i >= 0; i-- {
		e := &c.eras[i]
		until := e.until
		if i == n-1 {
			until = c.lastWall.Add(hostSlack)
		}
		if !t.Before(e.from) && !t.After(until) {
			return t.Add(e.offset)
		}
	}
	return t.Add(c.offset)
}

// atLeast moves the clock's floor up to t (the time the saved state was
// written): a wall clock behind it stepped back while jobwatch was stopped,
// and this host's records written from now on are moved on by the
// difference.
func (c *steadyClock) atLeast(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t = t.Round(0)
	if !t.After(c.last) {
		return
	}
	c.last = t
	w, m := c.wall().Round(0), c.mono()
	c.read, c.lastWall, c.lastMono = true, w, m
	if back := t.Sub(w.Add(c.offset)); back >= stepMin {
		c.steps[1]++
		c.offset += back
		c.logger.Warn("the host's clock is behind the time the state was saved: taken as a step back", "step", (-back).Round(time.Millisecond).String(), "wall", w, "saved", t)
		c.newEra(w, w)
	}
}

// stepCounts are the steps seen, by ClockDirection.
func (c *steadyClock) stepCounts() [2]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps
}

// processStart is the origin of the default monotonic clock.
var processStart = time.Now()

func ProcessMono() time.Duration { return time.Since(processStart) }

// steadyMono is a monotonic clock that follows the wall clock now: with
// it, no step of now is ever seen.
func steadyMono(now func() time.Time) func() time.Duration {
	start := now().Round(0)
	return func() time.Duration { return now().Round(0).Sub(start) }
}
