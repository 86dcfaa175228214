package model

import (
	"math"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// A run jobwatch cannot check (recorded on another host, or without a PID:
// a job_runs row, another host's log, a check-in) never ends when its
// wrapper dies, and a job without timeout: would show it running for
// ever. Such a run ends as lost, whichever comes first:
//   - when a later run of the job starts while it held a shared lock's
//     lease (its start named lock_ttl: jobwatch run --lock-redis): that run
//     got the lock, so the lease ran out without renewal;
//   - when a later run of the job starts on its host holding the host's
//     lock file (its start record says lock: file, as jobwatch run --lock
//     writes it): the earlier run, which held it until its end, is gone;
//   - stale_multiple periods after it started (abandonAfter).
//
// A later run on the same host that holds no lock does not end it: a run
// still going (the 25-minute run of a job started every minute) would lose
// its real end, and be counted lost instead. Decided in event time, as every
// verdict: the later start is applied in time order, and the age is
// judged against what the job has decided.

// unchecked reports whether r is a run the host cannot check.
func (t *Tracker) unchecked(r *Run) bool { return r.Host != t.opts.Host || r.PID <= 0 }

// supersede closes as lost the unchecked runs holding a lease that the
// start of r shows are gone, for a job without timeout.
func (t *Tracker) supersede(j *job, r *Run) {
	if j.spec.Timeout > 0 {
		return
	}
	for i := 0; i < len(j.open); i++ {
		o := j.open[i]
		if o == r || !o.Start.Before(r.Start) || !t.unchecked(o) || o.Lease <= 0 {
			continue
		}
		t.opts.Logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "a later run took its shared lock: its lease ran out")
		t.lose(j, o, r.Start)
		i--
	}
}

// hostLockTaken closes as lost the unchecked runs on r's host that
// started before it: r holds the host's lock file, which they held until
// their end.
func (t *Tracker) hostLockTaken(j *job, r *Run) {
	for i := 0; i < len(j.open); i++ {
		o := j.open[i]
		if o.Host != r.Host || !o.Start.Before(r.Start) || !t.unchecked(o) {
			continue
		}
		t.opts.Logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "a later run took the host's lock file")
		t.lose(j, o, r.Start)
		i--
	}
}

// abandonAfter is how long after its start an unchecked run of a job
// without timeout ends as lost: stale_multiple of the job's periods (0:
// never, for a job without a schedule).
func (j *job) abandonAfter(start time.Time) time.Duration {
	var period time.Duration
	switch s := j.spec.Schedule.(type) {
	case nil:
		return 0
	case schedule.Every:
		period = time.Duration(s)
	default:
		next, prev := s.Next(start), s.Prev(start)
		if next.IsZero() || prev.IsZero() {
			return 0
		}
		period = next.Sub(prev)
	}
	return time.Duration(max(j.spec.StaleMultiple, 1)) * period
}

// abandonDue reports whether abandon has a run to close at to.
func (t *Tracker) abandonDue(j *job, to time.Time) bool {
	return j.spec.Timeout <= 0 && to.UnixNano() > t.abandonQuiet(j)
}

// abandon closes as lost the unchecked runs of a job without timeout that
// are older than abandonAfter at at (what the job has decided).
func (t *Tracker) abandon(j *job, at time.Time) {
	if j.spec.Timeout > 0 || at.UnixNano() <= t.abandonQuiet(j) {
		return
	}
	for i := 0; i < len(j.open); i++ {
		o := j.open[i]
		if !t.unchecked(o) || at.UnixNano() < o.readLate {
			continue
		}
		after := j.abandonAfter(o.Start)
		if after <= 0 || !o.Start.Add(after).Before(at) {
			continue
		}
		t.opts.Logger.Info("closing run as lost", "job", j.spec.Name, "host", o.Host, "pid", o.PID, "started", o.Start, "reason", "open for stale_multiple periods, and jobwatch cannot check it")
		t.lose(j, o, o.Start.Add(after))
		i--
	}
}

// abandonQuiet is the time up to which abandon closes no run of j (Unix
// nanoseconds), worked out again only when a run started or the spec
// changed since (a run that ends only moves it later): abandon is asked at
// every record decided, and looking at each open run each time was a
// tenth of a catch-up's model time.
func (t *Tracker) abandonQuiet(j *job) int64 {
	if j.abandonQuiet != 0 {
		return j.abandonQuiet
	}
	quiet := int64(math.MaxInt64)
	for _, o := range j.open {
		after := j.abandonAfter(o.Start)
		if !t.unchecked(o) || after <= 0 {
			continue
		}
		// Closed at an at after its start plus after, and not before it
		// was read.
		quiet = min(quiet, max(o.Start.Add(after).UnixNano(), o.readLate-1))
	}
	j.abandonQuiet = quiet
	return quiet
}
