package model

import (
	"errors"
	"fmt"
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

// PausedState is a job's pauses and what they left unjudged.
type PausedState struct {
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

// PausedWhy says why the job is paused now: UnjudgedPaused (an operator's
// pause), UnjudgedMaintenance (one of its windows), or "" when it is not.
// It reads the state alone: the model ends a pause whose time is up, and
// opens and closes windows, at each reap (Tracker.Reap).
func (j *JobState) PausedWhy() string {
	switch {
	case !j.Pause.From.IsZero():
		return UnjudgedPaused
	case !j.MaintenanceUntil.IsZero():
		return UnjudgedMaintenance
	}
	return ""
}

// PausedUntil is when the pause or window in force ends; zero when not
// known (until resumed, or until healthy) or when the job is not paused.
func (j *JobState) PausedUntil() time.Time {
	if !j.Pause.From.IsZero() {
		return j.Pause.Until
	}
	return j.MaintenanceUntil
}

// UnjudgedByReason are the unjudged expected runs by reason, every reason
// included.
func (j *JobState) UnjudgedByReason() map[string]uint64 {
	m := make(map[string]uint64, len(UnjudgedReasons))
	for i, r := range UnjudgedReasons {
		m[r] = j.Unjudged[i]
	}
	return m
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
// missed: the index in UnjudgedReasons, or -1 when it is missed.
func (j *job) unjudgedAt(t time.Time) int {
	if p := j.Pause; !p.From.IsZero() && !t.Before(p.From) && (p.Until.IsZero() || t.Before(p.Until)) {
		return 0
	}
	if !j.spec.windowAt(t).IsZero() {
		return 1
	}
	for _, s := range j.Excused {
		if !t.Before(s.From) && t.Before(s.Until) {
			return slices.Index(UnjudgedReasons, s.Reason)
		}
	}
	return -1
}

// excuse keeps s, the oldest dropped past maxExcused.
func (j *job) excuse(s Span) {
	if !s.Until.After(s.From) {
		return
	}
	j.Excused = append(j.Excused, s)
	if len(j.Excused) > maxExcused {
		j.Excused = slices.Delete(j.Excused, 0, len(j.Excused)-maxExcused)
	}
}

// pruneExcused drops the spans whose every slot is decided.
func (j *job) pruneExcused() {
	if len(j.Excused) > 0 && !j.SlotsCheckedUntil.IsZero() {
		j.Excused = slices.DeleteFunc(j.Excused, func(s Span) bool { return !j.SlotsCheckedUntil.Before(s.Until) })
	}
}

// endPause ends the operator's pause at end: its slots stay unjudged
// until decided, and staleness counts from end.
func (j *job) endPause(end time.Time) {
	if end.Before(j.Pause.From) {
		end = j.Pause.From
	}
	j.excuse(Span{From: j.Pause.From, Until: end, Reason: UnjudgedPaused})
	j.Pause = Pause{}
	if end.After(j.PauseEnded) {
		j.PauseEnded = end
	}
}

// healthy ends a pause until healthy at a success that ended at end.
func (j *job) healthy(end time.Time) {
	if j.Pause.UntilHealthy && !end.Before(j.Pause.From) {
		j.endPause(end)
	}
}

// Pause pauses the job name from now (p.From is set to now) until p's end.
// A job paused already keeps its start and takes p's end and reason.
// Expected runs missed before the pause are forgiven: the runs in a row
// missed start again from 0 (the operator has seen them).
func (t *Tracker) Pause(name string, p Pause) (Pause, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[name]
	if j == nil || !j.Retired.IsZero() {
		return Pause{}, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	now := t.clock.now()
	if !p.Until.IsZero() && !p.Until.After(now) {
		return Pause{}, fmt.Errorf("pause until %s: that is not in the future", p.Until.Format(time.RFC3339))
	}
	j.own()
	p.From = now
	if !j.Pause.From.IsZero() {
		p.From = j.Pause.From
	}
	j.Pause = p
	j.ConsecutiveMissed = 0
	t.markJob(j)
	t.opts.Logger.Info("job paused", "job", name, "until", p.Until, "until_healthy", p.UntilHealthy, "reason", p.Reason)
	return p, nil
}

// Resume ends the operator's pause of the job name now.
func (t *Tracker) Resume(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.jobs[name]
	if j == nil || !j.Retired.IsZero() {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if j.Pause.From.IsZero() {
		return fmt.Errorf("%w: %q", ErrNotPaused, name)
	}
	j.own()
	j.endPause(t.clock.now())
	t.markJob(j)
	t.opts.Logger.Info("job resumed", "job", name)
	return nil
}

// keepPauses ends the pauses whose time is up, and opens and closes the
// jobs' maintenance windows, at now; Reap calls it.
func (t *Tracker) keepPauses(now time.Time) {
	for name, j := range t.jobs {
		if j.Pause.From.IsZero() && j.MaintenanceUntil.IsZero() && len(j.spec.Maintenance) == 0 {
			continue
		}
		if p := j.Pause; !p.From.IsZero() && !p.Until.IsZero() && !now.Before(p.Until) {
			j.own()
			j.endPause(p.Until)
			t.markJob(j)
			t.opts.Logger.Info("job's pause ended", "job", name, "until", p.Until)
		}
		end := j.spec.windowAt(now)
		if end.Equal(j.MaintenanceUntil) {
			continue
		}
		j.own()
		if end.IsZero() {
			// The window closed: staleness counts from its end.
			closed := j.MaintenanceUntil
			if now.Before(closed) {
				closed = now // the window is gone from the config
			}
			if closed.After(j.PauseEnded) {
				j.PauseEnded = closed
			}
		}
		j.MaintenanceUntil = end
		t.markJob(j)
	}
}

// excuseDowntime marks, for each job that only check-ins report (sources
// that receive, SourceSpec.Live), the expected runs from grace before the
// state was written to now as unknown: jobwatch was not running to receive
// their pings. A source that reads (a run log) is read afterwards, so its
// jobs' expected runs are judged.
func (t *Tracker) excuseDowntime(written, now time.Time) {
	if written.IsZero() || !now.After(written) {
		return
	}
	for _, j := range t.jobs {
		if !j.Retired.IsZero() || j.calendar() == nil || !t.liveOnly(j) {
			continue
		}
		j.own()
		j.excuse(Span{From: written.Add(-j.spec.Grace), Until: now, Reason: UnjudgedUnknown})
	}
}

// liveOnly reports whether every source that has reported the job is one
// that receives (check-ins), and one has.
func (t *Tracker) liveOnly(j *job) bool {
	if len(j.Sources) == 0 {
		return false
	}
	for _, name := range j.Sources {
		if src := t.sources[name]; src == nil || !src.live {
			return false
		}
	}
	return true
}
