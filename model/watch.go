package model

import (
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// Watch is what the watchdog derives from a job's state at one instant.
type Watch struct {
	SinceSuccess time.Duration // since the last success ended, or since first watched
	Period       time.Duration
	NextRun      time.Time
	Deadline     time.Time // stale after this
	Stale        bool
}

// Watch computes the job's staleness at now: WatchBasis(j).At(now).
func (j *JobView) Watch(now time.Time) Watch {
	b := j.WatchBasis()
	return b.At(now)
}

// WatchBasis is what a job's Watch is computed from at any instant: all
// of its state that Watch reads, without the state. A scrape's cache
// keeps it for every job (collector/segments.go) rather than the view,
// which would keep alive a state that the job has since replaced.
type WatchBasis struct {
	// since: SinceSuccess counts from it; deadline and next are Watch's.
	// Stamps: the cache keeps a basis for every job.
	since, deadline, next Stamp
	paused                bool
	period                time.Duration
	// calendar: the schedule whose next run and period depend on now
	// (nil for an every: job, or none).
	calendar schedule.Schedule
}

// WatchBasis is j's Watch without now.
//
// For a fixed period (every:) the job is stale once StaleMultiple periods
// plus grace have passed since its last success ended (or its last run of
// unknown result: a cron job at -L 1, whose results nobody logs). For a calendar
// schedule it is stale once the StaleMultiple-th expected run after the start
// of its last successful run, plus grace, has passed: a run that did not
// happen because its time did not exist (a DST gap) is then not counted
// against the job.
func (j *JobView) WatchBasis() WatchBasis {
	var b WatchBasis
	ref := j.LastSuccess.Time()
	if ref.IsZero() {
		ref = j.FirstWatched.Time()
	}
	b.since = StampOf(ref)
	// A run of unknown result (a cron job at -L 1) ran: the job is not
	// stale for want of a success nobody logs. Seconds since the last
	// success still count from a known one.
	if u := j.LastUnknown.Time(); u.After(ref) {
		ref = u
	}
	if r := j.Resumed.Time(); r.After(ref) {
		ref = r // a retired job back: nothing was due while it was gone
	}
	// Nothing is due while the job is paused: it is judged from the end
	// of its latest pause or window (pause.go), and while paused is
	// stale no earlier than its end (none when not known).
	b.paused = j.Pauses.Why() != ""
	if p := pausedRef(j, b.paused); p.After(ref) {
		ref = p
	}
	multiple := max(j.Spec.StaleMultiple, 1)
	switch s := j.Spec.Schedule.(type) {
	case nil:
		return b // no schedule: nothing is due
	case schedule.Every:
		b.period = time.Duration(s)
		b.deadline = StampOf(ref.Add(time.Duration(multiple)*b.period + j.Spec.Grace))
		last := j.LastStart.Time()
		if last.IsZero() {
			last = j.FirstWatched.Time()
		}
		b.next = StampOf(last.Add(b.period))
	default:
		b.calendar = s
		t := j.LastSuccessStart.Time()
		if t.IsZero() {
			t = j.FirstWatched.Time()
		}
		if u := j.LastUnknownStart.Time(); u.After(t) {
			t = u
		}
		if r := j.Resumed.Time(); r.After(t) {
			t = r
		}
		if p := pausedRef(j, b.paused); p.After(t) {
			t = p
		}
		for range multiple {
			if t = s.Next(t); t.IsZero() {
				break
			}
		}
		if !t.IsZero() {
			b.deadline = StampOf(t.Add(j.Spec.Grace))
		}
	}
	if b.paused && j.Pauses.Until().IsZero() {
		b.deadline = Stamp{} // until resumed: not known
	}
	return b
}

// At is the Watch of b at now.
func (b *WatchBasis) At(now time.Time) Watch {
	w := Watch{SinceSuccess: max(now.Sub(b.since.Time()), 0), Period: b.period, NextRun: b.next.Time(), Deadline: b.deadline.Time()}
	if s := b.calendar; s != nil {
		w.NextRun = s.Next(now)
		if prev := s.Prev(now); !prev.IsZero() && !w.NextRun.IsZero() {
			w.Period = w.NextRun.Sub(prev)
		}
	}
	w.Stale = !b.paused && !w.Deadline.IsZero() && now.After(w.Deadline)
	return w
}

// pausedRef is what staleness counts from at the earliest, for a pause:
// the end of the pause in force (paused), else when the last one ended.
func pausedRef(j *JobView, paused bool) time.Time {
	if end := j.Pauses.Until(); paused && end.After(j.Pauses.Ended()) {
		return end
	}
	return j.Pauses.Ended()
}
