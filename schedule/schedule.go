// Package schedule computes when a job's runs are expected.
//
// Three kinds of schedule exist, one per job: a fixed period (Every), a cron
// expression (ParseCron) and one or more systemd OnCalendar expressions
// (ParseOnCalendar). New picks the kind from a Spec, a job's schedule fields
// as plain values; Spec.Check reports every problem of them at once. Cron and
// OnCalendar schedules are read on the wall clock of a time zone; what
// happens when that clock jumps (DST) is documented on ParseCron,
// ParseOnCalendar and in docs/schedules.md.
//
// The package imports no other package of jobwatch (a test in
// internal/layering checks it): config validates every job's schedule by
// calling it, and discover reads the schedules it finds with it.
package schedule

import (
	"fmt"
	"io"
	"time"
)

// Schedule yields expected run times.
type Schedule interface {
	// Next returns the first expected run strictly after t, or the zero
	// Time if there is none within about five years.
	Next(t time.Time) time.Time
	// Prev returns the last expected run at or before t, or the zero Time
	// if there is none within about five years. It assigns a run to its
	// slot.
	Prev(t time.Time) time.Time
}

// Zoned is implemented by schedules that are read on a time zone's wall
// clock; their times are best shown in that zone.
type Zoned interface {
	Location() *time.Location
}

// Counted is implemented by schedules where one expected instant may stand
// for several runs: cron, waking up after a jump forward of the clock, runs a
// fixed-time job once for each of its times the jump skipped, one right after
// the other.
type Counted interface {
	// Runs returns how many runs are expected at t, a time Next or Prev
	// returned; at least 1.
	Runs(t time.Time) int
}

// Runs returns the multiplicity of the expected run at t: how many runs the
// scheduler starts for it (1 unless s is Counted and says more).
func Runs(s Schedule, t time.Time) int {
	if c, ok := s.(Counted); ok {
		if n := c.Runs(t); n > 1 {
			return n
		}
	}
	return 1
}

// Run is one expected run: an instant and how many runs start at it.
type Run struct {
	At    time.Time
	Count int
}

// Every is a fixed period: runs are expected one period apart, counted from
// whatever run came last.
type Every time.Duration

// Next returns t plus the period.
func (e Every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// Prev returns t itself: a fixed period has no grid of slots, every run
// starts its own period, so a run at t is in the slot that starts at t.
func (e Every) Prev(t time.Time) time.Time { return t }

func (e Every) String() string { return "every " + time.Duration(e).String() }

// Upcoming returns the next n expected runs strictly after after, fewer if
// the schedule ends.
func Upcoming(s Schedule, after time.Time, n int) []time.Time {
	if n <= 0 {
		return nil
	}
	out := make([]time.Time, 0, n)
	t := after
	for len(out) < n {
		next := s.Next(t)
		if next.IsZero() || !next.After(t) {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// UpcomingRuns is Upcoming with the multiplicity of each run.
func UpcomingRuns(s Schedule, after time.Time, n int) []Run {
	ts := Upcoming(s, after, n)
	out := make([]Run, len(ts))
	for i, t := range ts {
		out[i] = Run{At: t, Count: Runs(s, t)}
	}
	return out
}

// WriteUpcoming prints Upcoming(s, after, n), one RFC 3339 time a line, with
// the offset of the schedule's zone (Zoned), or of fallback for schedules
// without one (Every). A run that stands for several (cron catching up after
// a jump forward) is followed by " x" and their number, as in
// "2027-03-28T03:00:00+02:00 x2". This is the output of `jobwatch schedule`.
func WriteUpcoming(w io.Writer, s Schedule, after time.Time, n int, fallback *time.Location) error {
	loc := fallback
	if z, ok := s.(Zoned); ok && z.Location() != nil {
		loc = z.Location()
	}
	if loc == nil {
		loc = time.Local
	}
	runs := UpcomingRuns(s, after, n)
	for _, r := range runs {
		line := r.At.In(loc).Format(time.RFC3339)
		if r.Count > 1 {
			line += fmt.Sprintf(" x%d", r.Count)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if e, ok := s.(interface {
		NextErr(time.Time) (time.Time, error)
	}); ok && len(runs) < n {
		last := after
		if len(runs) > 0 {
			last = runs[len(runs)-1].At
		}
		if _, err := e.NextErr(last); err != nil {
			if _, err := fmt.Fprintf(w, "# no further run: %v\n", err); err != nil {
				return err
			}
		}
	}
	return nil
}
