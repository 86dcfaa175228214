package model

import (
	"log/slog"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/internal/ratelog"
	"github.com/jobwatch/jobwatch/schedule"
)

// The per-job state machine. A job's state (job) changes only by the
// transitions here: a record applied (apply: its facts, and the verdicts
// it makes against the runs in progress and the schedule), and a decision
// up to a time its watermark has passed (decide: the records held up to
// then, in time order, the runs that timed out or were abandoned by then,
// the slots missed). The orderer calls them, one job at a time under the
// Tracker's lock. They read no clock and do no I/O: the times they go by
// are the records' and the now they are given; whether a process is alive
// is the reap's to ask (orderer.reapJob).

// machine holds what every job's transitions need besides the job: this
// host's name, the sources' late windows, a logger, and where a record
// that repeats one applied already is counted.
type machine struct {
	host   string
	logger *slog.Logger
	// window is a source's late window (0: not configured).
	window func(source string) time.Duration
	// repeated counts a record that repeats one applied already as its
	// source's unreadable record.
	repeated func(source string)
}

// apply applies one event to its job; false: the record repeats one already
// applied (a second end of a run that just ended), counted as a source's
// unreadable record rather than as a run.
func (m *machine) apply(j *job, ev *Event, src string, now time.Time) bool {
	switch ev.Kind {
	case Start:
		m.applyStart(j, ev, src, now)
	case End:
		ok := m.applyEnd(j, ev)
		if ok && ev.Result == Skipped && !ev.late { // a run that declined: counted as a skip
			j.attributeSkip(ev.Time)
		}
		return ok
	case Skip:
		j.applySkip(ev)
		if !ev.late {
			j.attributeSkip(ev.Time)
		}
	case LockLost:
		// The run goes on (--on-lock-lost=warn) or is killed; its end
		// record follows and finishes it.
		if i := slices.Index(LockLayers, ev.Lock); i >= 0 { // the parsers take no other
			j.LockLostCounts[i]++
		}
	}
	return true
}

// applyStart opens a run, judged against the runs in progress and
// attributed to its slot.
func (m *machine) applyStart(j *job, ev *Event, src string, now time.Time) {
	if j.runs.at(runKey(ev.RunID, ev.Host, ev.PID)) >= 0 {
		return // the same start read twice: one run
	}
	r := &Run{RunID: ev.RunID, Host: ev.Host, PID: ev.PID, Start: StampOf(ev.Time), Source: src}
	if j.held.declined(r) {
		// The command declined to run (its end says skipped, held with
		// the records still pending): a skip, as that end counts it, and
		// not a run in progress, an overlap or a start.
		return
	}
	if !ev.late && ev.Lock == "file" {
		m.hostLockTaken(j, r)
	}
	// A late record is not judged against the runs around it: those
	// before it have been decided.
	r.Overlapped = !ev.late && j.overlaps(ev.Host)
	if r.Overlapped {
		j.Overlaps++
	}
	if ev.late {
		r.readLate = now.UnixNano() // a late record is applied as it is read
	}
	r.Lease = ev.LockTTL
	r.EndUnlogged = ev.EndUnlogged
	if oldest, full := j.runs.add(r); full {
		m.closeOldest(j, ev.Job, oldest, now)
	}
	if !ev.late {
		j.attribute(r)
		m.supersede(j, r)
	}
	j.ConsecutiveSkips = 0
	j.takeStart(ev)
}

// applyEnd finishes the run an end record closes (or, when none is open,
// the run it states); false: it repeats an end just applied.
func (m *machine) applyEnd(j *job, ev *Event) bool {
	ok, lost := j.takeEnd(ev)
	if lost {
		m.logger.Info("end of a run closed as lost: its result counted", "job", ev.Job, "host", ev.Host, "pid", ev.PID, "result", ev.Result)
	}
	if !ok {
		m.logger.Debug("second end of a run that just ended; not counted", "job", ev.Job, "host", ev.Host, "pid", ev.PID, "run_id", ev.RunID)
	}
	return ok
}

// decide applies the job's pending records dated up to to, in time order,
// closes the runs that outlived the job's timeout by then, and counts the
// slots whose grace ended by then that had no run; changed reports whether
// the job's saved state did. A job whose decisions only move on in time,
// with nothing applied, lost or counted, is not copied or marked changed:
// every job is decided every few seconds.
func (m *machine) decide(j *job, to, now time.Time) (changed bool) {
	if to.Before(j.decided) {
		return false
	}
	j.decided = to // an equal to still applies records held at that instant
	sched := j.calendar()
	due := len(j.held.list) > 0 && !j.held.list[0].Time().After(to) ||
		j.spec.Timeout > 0 && slices.ContainsFunc(j.runs.open, func(r *Run) bool { return m.timeoutDue(j, r, to) }) ||
		m.abandonDue(j, to)
	if !due && sched != nil {
		if j.SlotsCheckedUntil.IsZero() {
			due = true
		} else if tally := j.missedUntil(sched, j.missedCutoff(sched, to)); !j.SlotsCheckedUntil.Equal(tally.checked) {
			due = true
		}
	}
	if !due {
		return false
	}
	j.own()
	startSlots(j, sched)
	m.applyPending(j, j.held.due(to), now)
	m.timeOut(j, to)
	m.abandon(j, to)
	if sched != nil {
		j.accountMissed(sched, j.missedCutoff(sched, to))
	}
	return true
}

// startSlots: slots count from when the job was first watched (or its
// earliest record), whatever record comes first.
func startSlots(j *job, sched schedule.Schedule) {
	if sched != nil && j.SlotsCheckedUntil.IsZero() {
		j.SlotsCheckedUntil = j.FirstWatched
	}
}

// applyPending applies the job's first n pending records, in their order,
// and lets them go.
func (m *machine) applyPending(j *job, n int, now time.Time) {
	// One Event for every record, spelled out in place: apply keeps no
	// pointer to it, and one made for each record was moved to the heap
	// (70 MB of garbage in a catch-up of 300,000 records).
	var ev Event
	j.held.release(n, func(h *Held) {
		ev = h.Event()
		ev.Job = j.spec.Name
		m.decideRecord(j, &ev, h.Source(), now)
	})
}

// decideRecord applies a record its job's watermark has passed: the runs
// that outlived the job's timeout or were abandoned by its time are
// closed first.
func (m *machine) decideRecord(j *job, ev *Event, source string, now time.Time) {
	m.timeOut(j, ev.Time)
	m.abandon(j, ev.Time)
	if !m.apply(j, ev, source, now) {
		m.repeated(source)
	}
}

// timeOut closes as lost, at start plus timeout, the runs whose job's
// timeout ended before at, its source's late window and TimeoutMargin
// too (timeoutDue; in event time: a run whose end is held with the
// records still pending is not closed). A run whose start came late is
// closed only once at has passed the moment it was read: its end, written
// after it, may come a moment later, in the next batch, and the job has
// decided past its timeout already.
func (m *machine) timeOut(j *job, at time.Time) {
	if j.spec.Timeout <= 0 {
		return
	}
	for len(j.runs.open) > 0 {
		i := slices.IndexFunc(j.runs.open, func(r *Run) bool {
			return m.timeoutDue(j, r, at) && at.UnixNano() >= r.readLate
		})
		if i < 0 {
			return
		}
		r := j.runs.open[i]
		m.logger.Info("closing run as lost", "job", j.spec.Name, "host", r.Host, "pid", r.PID, "started", r.Start, "reason", "open longer than the job's timeout")
		m.lose(j, r, r.Start.Time().Add(j.spec.Timeout))
	}
}

// closeOldest closes as lost a job's oldest open run, which the runs in
// progress let go to make room (see MaxOpenRuns).
func (m *machine) closeOldest(j *job, name string, oldest *Run, now time.Time) {
	m.logger.Warn("too many runs in progress; closing the oldest as lost", ratelog.Per("job"), "job", name, "limit", MaxOpenRuns, "host", oldest.Host, "pid", oldest.PID, "started", oldest.Start)
	m.lose(j, oldest, now)
}

// lose closes an open run as lost at at and remembers it, so that its late end
// record is not counted again.
func (m *machine) lose(j *job, r *Run, at time.Time) {
	j.own()
	j.closeByJobwatch(r)
	j.finish(Lost, r.Start.Time(), at, 0, false, 0, false)
	j.history.remember(RecentRunFields{Start: r.Start.Time(), End: at, Result: Lost, Host: r.Host, PID: r.PID, Overlapped: r.Overlapped})
}

// endUnlogged closes a run whose end is not logged (Run.EndUnlogged: a
// cron job at -L 1) once its process is gone: it ran and ended, how is not
// known. It ended when its process was first seen gone, if jobwatch saw
// it alive; else (a run of the history read on first start, or one that
// ended while jobwatch was stopped) when is not known either, and it is
// dated at its start, the one time known: a job whose runs stopped days
// ago is not made fresh by reading them now. Its key is remembered as a
// lost run's is, so that an end record that does come after all (a cron
// whose level changed) is not counted as a second run.
func (m *machine) endUnlogged(j *job, r *Run) {
	j.own()
	j.closeByJobwatch(r)
	end := r.Start
	if r.seenAlive && r.goneSince.After(r.Start.Time()) {
		end = r.goneSince
	}
	j.finish(Unknown, r.Start.Time(), end.Time(), 0, false, 0, false)
	j.history.remember(RecentRunFields{Start: r.Start.Time(), End: end.Time(), Result: Unknown, Host: r.Host, PID: r.PID, Overlapped: r.Overlapped})
}
