package model

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// Pauses and maintenance windows (docs/ownership.md, "Pauses and
// maintenance"). While a job is paused by an operator, or in one of its
// maintenance windows, its runs are still counted, but the expected runs
// that fall then are not judged: without a run they count as unjudged
// (reason paused or maintenance), never as missed, and the job is not
// stale; afterwards its staleness counts from when the pause or window
// ended. The expected runs of a job reported by check-ins alone that fell
// while jobwatch was not running are unjudged too (reason unknown): their
// pings had nowhere to go.

// Why an expected run without a run was not judged missed: the reason
// label of jobwatch_job_unjudged_runs_total.
const (
	UnjudgedPaused      = "paused"
	UnjudgedMaintenance = "maintenance"
	// UnjudgedUnknown: it fell while jobwatch was not running, and only
	// check-ins, which nobody received then, report the job.
	UnjudgedUnknown = "unknown"
)

// UnjudgedReasons lists the reasons in the order of JobState.Unjudged.
var UnjudgedReasons = []string{UnjudgedPaused, UnjudgedMaintenance, UnjudgedUnknown}

// maxExcused bounds the spans a job keeps for slots not yet decided: a
// job paused and resumed again and again before its slots are decided
// (a source down) keeps the latest.
const maxExcused = 16

// Pauses are a job's pauses and what they left unjudged (JobState.Pauses:
// nil for a job never paused nor in a window, as most are). The reading
// methods take a nil Pauses as none.
type Pauses struct {
	// Pause is the operator's pause in force (zero From: none).
	Pause Pause
	// MaintenanceUntil is the end of the maintenance window in force
	// (zero: none).
	MaintenanceUntil time.Time
	// PauseEnded is when the latest pause or window ended: the job's
	// staleness counts from then at the earliest.
	PauseEnded time.Time
	// Excused are the spans whose expected runs are not judged missed,
	// kept until the slots are decided past them.
	Excused []Span
	// Unjudged counts the expected runs without a run that were not
	// judged missed, by reason, in the order of UnjudgedReasons.
	Unjudged [3]uint64
}

// Pause is an operator's pause of a job (jobwatch pause).
type Pause struct {
	From time.Time
	// Until ends the pause (zero: until resumed, or, with UntilHealthy,
	// until the job's next success).
	Until        time.Time
	UntilHealthy bool
	Reason       string
}

// Window is a maintenance window: it opens at each time of Schedule and
// lasts Duration.
type Window struct {
	Schedule schedule.Schedule
	Duration time.Duration
}

// Span is a time whose expected runs are not judged missed, and why (one
// of UnjudgedReasons): a pause that ended, or a time jobwatch was not
// running. It is kept until the job's slots are decided past it.
type Span struct {
	From, Until time.Time
	Reason      string
}

// ErrUnknownJob: no job of that name is watched.
var ErrUnknownJob = errors.New("no such job")

// ErrNotPaused: a resume of a job that is not paused.
var ErrNotPaused = errors.New("job is not paused")

// Why says why the job is paused now: UnjudgedPaused (an operator's
// pause), UnjudgedMaintenance (one of its windows), or "" when it is not.
// It reads the state alone: the model ends a pause whose time is up, and
// opens and closes windows, at each reap (Tracker.Reap).
func (p *Pauses) Why() string {
	switch {
	case p == nil:
		return ""
	case !p.Pause.From.IsZero():
		return UnjudgedPaused
	case !p.MaintenanceUntil.IsZero():
		return UnjudgedMaintenance
	}
	return ""
}

// Until is when the pause or window in force ends; zero when not known
// (until resumed, or until healthy) or when the job is not paused.
func (p *Pauses) Until() time.Time {
	if p == nil {
		return time.Time{}
	}
	if !p.Pause.From.IsZero() {
		return p.Pause.Until
	}
	return p.MaintenanceUntil
}

// UnjudgedByReason are the unjudged expected runs by reason, every reason
// included.
func (p *Pauses) UnjudgedByReason() map[string]uint64 {
	m := make(map[string]uint64, len(UnjudgedReasons))
	counts := p.UnjudgedCounts()
	for i, r := range UnjudgedReasons {
		m[r] = counts[i]
	}
	return m
}

// UnjudgedCounts are Unjudged, zeros when p is nil.
func (p *Pauses) UnjudgedCounts() [3]uint64 {
	if p == nil {
		return [3]uint64{}
	}
	return p.Unjudged
}

// Ended is PauseEnded, zero when p is nil.
func (p *Pauses) Ended() time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.PauseEnded
}

// clone is a deep copy of p (nil stays nil).
func (p *Pauses) clone() *Pauses {
	if p == nil {
		return nil
	}
	c := *p
	c.Excused = slices.Clone(p.Excused)
	return &c
}

// ownPauses is j's Pauses to change, made when it has none. The caller
// has called job.own: the state's copy (cloneSharingDurations) copied the
// Pauses too, so a saved view never sees the change. A function, not a
// method: job has its methods' fill (internal/layering).
func ownPauses(j *JobState) *Pauses {
	if j.Pauses == nil {
		j.Pauses = &Pauses{}
	}
	return j.Pauses
}

// windowAt is the end of the job's maintenance window open at t, zero when
// none is.
func (s *JobSpec) windowAt(t time.Time) time.Time {
	var end time.Time
	for _, w := range s.Maintenance {
		open := w.Schedule.Prev(t)
		if open.IsZero() {
			continue
		}
		if e := open.Add(w.Duration); t.Before(e) && e.After(end) {
			end = e
		}
	}
	return end
}

// unjudgedAt says why an expected run at t that had no run is not judged
// missed, of a job with spec: the index in UnjudgedReasons, or -1 when it
// is missed.
func (p *Pauses) unjudgedAt(spec *JobSpec, t time.Time) int {
	if p == nil {
		if !spec.windowAt(t).IsZero() {
			return 1
		}
		return -1
	}
	if pp := p.Pause; !pp.From.IsZero() && !t.Before(pp.From) && (pp.Until.IsZero() || t.Before(pp.Until)) {
		return 0
	}
	if !spec.windowAt(t).IsZero() {
		return 1
	}
	for _, s := range p.Excused {
		if !t.Before(s.From) && t.Before(s.Until) {
			return slices.Index(UnjudgedReasons, s.Reason)
		}
	}
	return -1
}

// excuse keeps s, the oldest dropped past maxExcused.
func (p *Pauses) excuse(s Span) {
	if !s.Until.After(s.From) {
		return
	}
	p.Excused = append(p.Excused, s)
	if len(p.Excused) > maxExcused {
		p.Excused = slices.Delete(p.Excused, 0, len(p.Excused)-maxExcused)
	}
}

// prune drops the spans whose every slot is decided: those that end by
// checked (JobState.SlotsCheckedUntil).
func (p *Pauses) prune(checked time.Time) {
	if p != nil && len(p.Excused) > 0 && !checked.IsZero() {
		p.Excused = slices.DeleteFunc(p.Excused, func(s Span) bool { return !checked.Before(s.Until) })
	}
}

// end ends the operator's pause at end: its slots stay unjudged until
// decided, and staleness counts from end.
func (p *Pauses) end(end time.Time) {
	if end.Before(p.Pause.From) {
		end = p.Pause.From
	}
	p.excuse(Span{From: p.Pause.From, Until: end, Reason: UnjudgedPaused})
	p.Pause = Pause{}
	if end.After(p.PauseEnded) {
		p.PauseEnded = end
	}
}

// healthy ends a pause until healthy at a success that ended at end.
func (p *Pauses) healthy(end time.Time) {
	if p != nil && p.Pause.UntilHealthy && !end.Before(p.Pause.From) {
		p.end(end)
	}
}

// Pause pauses the job name from now (p.From is set to now) until p's end.
// A job paused already keeps its start and takes p's end and reason.
// Expected runs missed before the pause are forgiven: the runs in a row
// missed start again from 0 (the operator has seen them).
func (t *Tracker) Pause(name string, p Pause) (Pause, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.order.jobs[name]
	if j == nil || !j.Retired.IsZero() {
		return Pause{}, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	now := t.clock.now()
	if !p.Until.IsZero() && !p.Until.After(now) {
		return Pause{}, fmt.Errorf("pause until %s: that is not in the future", p.Until.Format(time.RFC3339))
	}
	j.own()
	own := ownPauses(j.JobState)
	p.From = now
	if !own.Pause.From.IsZero() {
		p.From = own.Pause.From
	}
	own.Pause = p
	j.ConsecutiveMissed = 0
	t.log.markJob(j) // logged by the caller, with who asked (status.AdminHandler)
	return p, nil
}

// Resume ends the operator's pause of the job name now.
func (t *Tracker) Resume(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.order.jobs[name]
	if j == nil || !j.Retired.IsZero() {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if j.Pauses.Why() != UnjudgedPaused {
		return fmt.Errorf("%w: %q", ErrNotPaused, name)
	}
	j.own()
	j.Pauses.end(t.clock.now())
	t.log.markJob(j)
	return nil
}

// keepPauses ends the pauses whose time is up, and opens and closes the
// jobs' maintenance windows, at now; Tracker.Reap calls it.
func keepPauses(jobs map[string]*job, log *changeLog, logger *slog.Logger, now time.Time) {
	for name, j := range jobs {
		if j.Pauses == nil && len(j.spec.Maintenance) == 0 {
			continue
		}
		if p := j.Pauses; p != nil && !p.Pause.From.IsZero() && !p.Pause.Until.IsZero() && !now.Before(p.Pause.Until) {
			until := p.Pause.Until
			j.own()
			j.Pauses.end(until)
			log.markJob(j)
			logger.Info("job's pause ended", "job", name, "until", until)
		}
		end := j.spec.windowAt(now)
		var open time.Time
		if j.Pauses != nil {
			open = j.Pauses.MaintenanceUntil
		}
		if end.Equal(open) {
			continue
		}
		j.own()
		p := ownPauses(j.JobState) // the job's own copy
		if end.IsZero() {
			// The window closed: staleness counts from its end.
			closed := p.MaintenanceUntil
			if now.Before(closed) {
				closed = now // the window is gone from the config
			}
			if closed.After(p.PauseEnded) {
				p.PauseEnded = closed
			}
		}
		p.MaintenanceUntil = end
		log.markJob(j)
	}
}

// excuseDowntime marks, for each job that only check-ins report (sources
// that receive, SourceSpec.Live), the expected runs from grace before the
// state was written to now as unknown: jobwatch was not running to receive
// their pings. A source that reads (a run log) is read afterwards, so its
// jobs' expected runs are judged. Tracker.Restore calls it.
func excuseDowntime(jobs map[string]*job, sources map[string]*source, written, now time.Time) {
	if written.IsZero() || !now.After(written) {
		return
	}
	for _, j := range jobs {
		if !j.Retired.IsZero() || j.calendar() == nil || !liveOnly(j, sources) {
			continue
		}
		j.own()
		ownPauses(j.JobState).excuse(Span{From: written.Add(-j.spec.Grace), Until: now, Reason: UnjudgedUnknown})
	}
}

// liveOnly reports whether every source that has reported the job is one
// that receives (check-ins), and one has.
func liveOnly(j *job, sources map[string]*source) bool {
	if len(j.Sources) == 0 {
		return false
	}
	for _, name := range j.Sources {
		if src := sources[name]; src == nil || !src.live {
			return false
		}
	}
	return true
}
