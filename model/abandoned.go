package model

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A run jobwatch cannot check (recorded on another host, or without a PID:
// a job_runs row, another host's log, a check-in) never ends when its
// wrapper dies, and a job without timeout: would show it running for
// ever. It stays in progress (JobwatchJobRunningTooLong pages on it) until
// its end, or evidence that it is over, whichever comes first:
//   - when a later run of the job starts while it held a shared lock's
//     lease (its start named lock_ttl: jobwatch run --lock-redis): that run
//     got the lock, so the lease ran out without renewal;
//   - when a later run of the job starts on its host holding the host's
//     lock file (its start record says lock: file, as jobwatch run --lock
//     writes it): the earlier run, which held it until its end, is gone;
//   - without either, abandon_after after it started (abandonAfter; 24 h
//     by default): a horizon far beyond any period. A run whose end is
//     not logged (another host's cron at -L 1) ends there as unknown, not
//     lost. Time alone says the
//     run is long, not that it is over: stale_multiple periods, the rule
//     before, closed as lost runs still going (an application's 45 s run
//     of a 10 s job), and the open runs of a replayed backlog.
//
// An end read for a run closed as lost is still counted as its result
// (lostEnd). A later run on the same host that holds no lock does not end
// it: a run still going (the 25-minute run of a job started every minute) would lose
// its real end, and be counted lost instead. Decided in event time, as every
// verdict: the later start is applied in time order, and the age is
// judged against what the job has decided.

// unchecked reports whether r is a run the host cannot check.
func (m *machine) unchecked(r *Run) bool { return r.Host != m.host || r.PID <= 0 }

// supersede closes as lost the unchecked runs holding a lease that the
// start of r shows are gone, for a job without timeout.
func (m *machine) supersede(j *job, r *Run) {
	if j.spec.Timeout > 0 {
		return
	}
	for i := 0; i < len(j.runs.open); i++ {
		o := j.runs.open[i]
		if o == r || !o.Start.Before(r.Start.Time()) || !m.unchecked(o) || o.Lease <= 0 {
			continue
		}
		m.logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "a later run took its shared lock: its lease ran out")
		m.lose(j, o, r.Start.Time())
		i--
	}
}

// hostLockTaken closes as lost the unchecked runs on r's host that
// started before it: r holds the host's lock file, which they held until
// their end.
func (m *machine) hostLockTaken(j *job, r *Run) {
	for i := 0; i < len(j.runs.open); i++ {
		o := j.runs.open[i]
		if o.Host != r.Host || !o.Start.Before(r.Start.Time()) || !m.unchecked(o) {
			continue
		}
		m.logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "a later run took the host's lock file")
		m.lose(j, o, r.Start.Time())
		i--
	}
}

// DefaultAbandonAfter is abandon_after's default.
const DefaultAbandonAfter = 24 * time.Hour

// abandonAfter is how long after its start an unchecked run of a job
// without timeout ends as lost: the job's abandon_after.
func (s JobSpec) abandonAfter() time.Duration {
	return cmp.Or(s.AbandonAfter, DefaultAbandonAfter)
}

// abandonDue reports whether abandon has a run to close at to.
func (m *machine) abandonDue(j *job, to time.Time) bool {
	return j.spec.Timeout <= 0 && to.UnixNano() > m.abandonQuiet(j)
}

// abandon closes as lost the unchecked runs of a job without timeout that
// are older than abandonAfter at at (what the job has decided).
func (m *machine) abandon(j *job, at time.Time) {
	if j.spec.Timeout > 0 || at.UnixNano() <= m.abandonQuiet(j) {
		return
	}
	for i := 0; i < len(j.runs.open); i++ {
		o := j.runs.open[i]
		if !m.unchecked(o) || at.UnixNano() < o.readLate {
			continue
		}
		after := j.spec.abandonAfter()
		if !o.Start.Time().Add(after).Before(at) {
			continue
		}
		if o.EndUnlogged {
			// Another host's cron at -L 1: nothing will end it, and
			// nothing says it failed.
			m.endUnlogged(j, o)
		} else {
			m.logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "open for abandon_after, and jobwatch cannot check it")
			m.lose(j, o, o.Start.Time().Add(after))
		}
		i--
	}
}

// abandonQuiet is the time up to which abandon closes no run of j (Unix
// nanoseconds), worked out again only when a run started or the spec
// changed since (a run that ends only moves it later): abandon is asked at
// every record decided, and looking at each open run each time was a
// tenth of a catch-up's model time.
func (m *machine) abandonQuiet(j *job) int64 {
	if j.runs.abandonQuiet != 0 {
		return j.runs.abandonQuiet
	}
	quiet := int64(math.MaxInt64)
	for _, o := range j.runs.open {
		after := j.spec.abandonAfter()
		if !m.unchecked(o) {
			continue
		}
		// Closed at an at after its start plus after, and not before it
		// was read.
		quiet = min(quiet, max(o.Start.Time().Add(after).UnixNano(), o.readLate-1))
	}
	j.runs.abandonQuiet = quiet
	return quiet
}

// TimeoutMargin is how long after a run's timeout, and its source's late
// window, its end may still come before the run is closed as lost: the
// wrapper that enforces the same timeout (jobwatch run --timeout) sends
// SIGTERM at it, SIGKILL --kill-after later (10 s by default), and then
// writes the end, which its source reads a moment later.
const TimeoutMargin = 15 * time.Second

// timeoutDue reports whether r, open at at, has outlived its job's
// timeout, its source's late window and TimeoutMargin.
func (m *machine) timeoutDue(j *job, r *Run, at time.Time) bool {
	cut := j.spec.Timeout + TimeoutMargin + m.window(r.Source)
	return r.Start.Time().Add(cut).Before(at)
}

// timedOut reports whether ev, the end of a run that lasted dur (hasDur:
// known) and failed, is a timeout: jobwatch run's exit codes for a command
// it stopped at --timeout (124) or killed after it (137, SIGKILL), at or
// after the job's timeout.
func (s JobSpec) timedOut(ev *Event, dur time.Duration, hasDur bool) bool {
	return s.Timeout > 0 && hasDur && dur >= s.Timeout && ev.HasExitCode && (ev.ExitCode == 124 || ev.ExitCode == 137)
}

// lostEnd takes an end of the run of key, closed as lost already (its
// process seen gone before its end was read, its timeout or abandon_after
// passed, a later run took its lock): it is still counted as the run's
// result, once (the lost count stays: counters never go back), so that a
// late success ends a run of failures.
func (j *job) lostEnd(key RunKey) {
	j.LostRuns = slices.DeleteFunc(slices.Clone(j.LostRuns), func(k RunKey) bool { return k == key })
}
