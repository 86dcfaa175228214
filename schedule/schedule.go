// Package schedule computes when a job's runs are expected.
//
// Three kinds of schedule exist, one per job: a fixed period (Every), a cron
// expression (ParseCron) and one or more systemd OnCalendar expressions
// (ParseOnCalendar). FromJob picks the kind from a config.Job; Validate
// reports every problem of a job's schedule fields at once. Cron and
// OnCalendar schedules are read on the wall clock of a time zone; what
// happens when that clock jumps (DST) is documented on ParseCron,
// ParseOnCalendar and in docs/schedules.md.
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

// WriteUpcoming prints Upcoming(s, after, n), one RFC 3339 time a line, with
// the offset of the schedule's zone (Zoned), or of fallback for schedules
// without one (Every). This is the output of `jobwatch schedule`.
func WriteUpcoming(w io.Writer, s Schedule, after time.Time, n int, fallback *time.Location) error {
	loc := fallback
	if z, ok := s.(Zoned); ok && z.Location() != nil {
		loc = z.Location()
	}
	if loc == nil {
		loc = time.Local
	}
	for _, t := range Upcoming(s, after, n) {
		if _, err := fmt.Fprintln(w, t.In(loc).Format(time.RFC3339)); err != nil {
			return err
		}
	}
	return nil
}
