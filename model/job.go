package model

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"
)

// job is one job's state: the part of the per-job state machine that
// holds, as the state machine's transitions (machine) leave it, its
// spec, its saved state, its runs in progress and the records the
// orderer holds for its watermark. A job is changed by one goroutine at a
// time (under the Tracker's lock) and knows no clock: every time it is
// given is an event time or the caller's now.
type job struct {
	// spec is one of the specs given to Configure, which its caller keeps
	// and does not change (a copy in each job was 160 bytes a job beside
	// the caller's), or a retired job's own.
	spec *JobSpec
	// The job's state, shared with its latest view while shared is set:
	// every change of it starts with own.
	*JobState
	shared atomic.Bool // atomic: views are also taken under the tracker's read lock
	// durationsShared: the state's histogram shares its buckets with the
	// state it was copied from (own), until a duration is observed.
	durationsShared bool
	runs            openRuns
	held            heldRecords
	history         runHistory
	dirty           bool   // in changeLog.dirty
	batch           uint64 // orderer.batches when a batch last touched it
	// scanIndex is its index in orderer.scanned for that batch.
	scanIndex int
	decided   time.Time // JobView.DecidedUntil; see reapIndex.decidedOf
	reapSlot  int       // its index in reapIndex.list
}

// own gives the job a state of its own before it changes: a view shares
// the state rather than copying it (most jobs do not change between two
// saves, and every saved view held a copy of its job's state).
func (j *job) own() {
	if j.shared.Load() {
		j.JobState = j.JobState.cloneSharingDurations()
		j.durationsShared = true
		j.shared.Store(false)
	}
}

func newJob(now time.Time) *job {
	return &job{JobState: &JobState{FirstWatched: StampOf(now)}}
}

// configure gives j the spec s, taking a retired job up again: it is
// expected from now on, as if first watched now, with its history kept.
func (j *job) configure(s *JobSpec, now time.Time) {
	j.spec, j.runs.abandonQuiet = s, 0
	if j.Discovered != s.Discovered {
		j.own()
		j.Discovered = s.Discovered
	}
	if j.Retired.IsZero() {
		return
	}
	j.own()
	j.Retired, j.Resumed = Stamp{}, StampOf(now)
	// No run was due while it was gone: slots and staleness count from
	// now, not from before it was retired.
	j.ConsecutiveMissed = 0
	if j.SlotsCheckedUntil.Before(now) {
		j.SlotsCheckedUntil = StampOf(now)
	}
}

// retire makes j a retired job, if it is not one yet: its spec has no
// schedule, timeout or threshold left, so nothing is expected of it, and
// its state stays as it is. A retired job's spec is the same before and
// after a restart (retiredSpec), when nothing else of it is known.
func (j *job) retire(now time.Time) {
	j.spec, j.runs.abandonQuiet = retiredSpec(j.spec.Name), 0
	if !j.Retired.IsZero() {
		return
	}
	j.own()
	j.Retired = StampOf(now)
}

func retiredSpec(name string) *JobSpec {
	return &JobSpec{Name: name, Scope: "host", Discovered: true}
}

// takeEnd applies an end record to j: applyEnd's rule, and the facts'
// of a held one (job.fact). ok is false when it repeats an end just
// applied; lost, when its run was closed as lost already (lostEnd).
func (j *job) takeEnd(ev *Event) (ok, lost bool) {
	r := j.runs.find(ev)
	key := runKey(ev.RunID, ev.Host, ev.PID)
	if r == nil && slices.Contains(j.LostRuns, key) {
		j.lostEnd(key)
		lost = true
	}
	if r == nil && j.runs.endedJustNow(key, ev.Time) {
		return false, lost
	}
	j.runs.rememberEnd(key, ev.Time)
	if ev.Result == Skipped {
		j.applyDeclined(r, ev)
		return true, lost
	}
	j.endRun(r, ev)
	return true, lost
}

// endRun finishes r (nil: no run of the end is open) with the end ev: its
// result (too short, timed out), exit code and duration, from ev or from
// r's start.
func (j *job) endRun(r *Run, ev *Event) {
	dur, hasDur := ev.Duration, ev.HasDuration
	start := ev.Time.Add(-dur)
	rr := RecentRunFields{End: ev.Time, Result: ev.Result, Host: ev.Host, PID: ev.PID, ExitCode: ev.ExitCode, HasExitCode: ev.HasExitCode, Output: ev.Output, OutputRef: ev.OutputRef, Reason: ev.Reason}
	if hasDur {
		rr.Start = start
	}
	if r != nil {
		j.runs.close(r.Key())
		start = r.Start.Time()
		rr.Start, rr.Host, rr.PID, rr.Overlapped = r.Start.Time(), r.Host, r.PID, r.Overlapped
		if !hasDur && !ev.Time.Before(r.Start.Time()) {
			dur, hasDur = ev.Time.Sub(r.Start.Time()), true
		}
	}
	rr.Duration, rr.HasDuration = dur, hasDur
	if rr.Result == Success && hasDur && dur < j.spec.MinDuration {
		rr.Result = TooShort
	}
	if rr.Result == Failure && j.spec.timedOut(ev, dur, hasDur) {
		rr.Result = Timeout
	}
	j.finish(rr.Result, start, ev.Time, dur, hasDur, ev.ExitCode, ev.HasExitCode)
	j.history.remember(rr)
}

// applySkip counts a skip (the slot it fills: machine.apply).
func (j *job) applySkip(ev *Event) {
	// A run recorded as started and then marked skipped (a job_runs row
	// whose status became "skipped", a check-in skip with the start's rid)
	// did not run: it leaves the runs in progress without counting as a
	// finished run.
	if ev.RunID != "" {
		j.runs.close(runKey(ev.RunID, "", 0))
	}
	j.countSkip(ev, time.Time{})
}

// applyDeclined applies an end with status skipped: the command started
// (jobwatch run wrote its start) and declined to run (--skipped-exit,
// --skipped-output). r is its run when it is open (its start was applied
// before this end was read): it leaves the runs in progress. Either way
// it counts as a skip, never as a finished run, and last success stays.
func (j *job) applyDeclined(r *Run, ev *Event) {
	var began time.Time
	if r != nil {
		j.runs.close(r.Key())
		began = r.Start.Time()
	}
	j.countSkip(ev, began)
}

// countSkip counts a skip at ev's time; began is when its run started,
// when known. The slot it fills is the machine's to judge (machine.apply):
// the facts shown of a held skip (facts.go) judge none.
func (j *job) countSkip(ev *Event, began time.Time) {
	j.Skips++
	label := ev.SkipLabel
	if label == "" {
		label = SkipOther
	}
	j.AddSkips(label, 1)
	j.ConsecutiveSkips++
	j.history.remember(RecentRunFields{Start: began, End: ev.Time, Result: Skipped, Host: ev.Host, PID: ev.PID, Reason: ev.Reason, Lock: ev.Lock, Holder: ev.Holder})
}

// overlaps reports whether a run starting on host overlaps one in progress:
// any run of a cluster-scope job, a run on the same host for a host-scope
// job (whose hosts each run it, at the same time).
// A run that declined to run (heldRecords.declined) is not one to overlap.
func (j *job) overlaps(host string) bool {
	cluster := j.spec.Scope == "cluster"
	return slices.ContainsFunc(j.runs.open, func(r *Run) bool { return (cluster || r.Host == host) && !j.held.declined(r) })
}

func (j *job) finish(res Result, start, end time.Time, dur time.Duration, hasDur bool, exit int, hasExit bool) {
	j.RunCounts[slices.Index(Results, res)]++
	if hasDur {
		j.history.observeDuration(dur.Seconds())
		if j.durationsShared { // own copied the state but its buckets
			j.Durations.Counts = slices.Clone(j.Durations.Counts)
			j.Durations.Native = slices.Clone(j.Durations.Native)
			j.durationsShared = false
		}
		j.Durations.Observe(dur.Seconds())
		j.LastDuration = dur.Seconds()
		j.HasLastDuration = true
	}
	if hasExit {
		j.LastExitCode = exit
		j.HasLastExitCode = true
	}
	if res == Unknown {
		// Neither a success nor a failure: runs in a row of failures go
		// on counting after it.
		if j.LastUnknown.Before(end) {
			j.LastUnknown, j.LastUnknownStart = StampOf(end), StampOf(start)
		}
		return
	}
	if res == Success {
		j.Pauses.healthy(end)
		if j.LastSuccess.Before(end) {
			j.LastSuccess = StampOf(end)
			j.LastSuccessStart = StampOf(start)
		}
		j.ConsecutiveFailures = 0
		return
	}
	if j.LastFailure.Before(end) {
		j.LastFailure = StampOf(end)
	}
	j.ConsecutiveFailures++
}

// closeByJobwatch removes an open run that jobwatch closes (lost, or of
// unknown result) and remembers its key, so that its late end record is
// not counted again.
func (j *job) closeByJobwatch(r *Run) {
	j.runs.close(r.Key())
	j.LostRuns = append(j.LostRuns, r.Key())
	if len(j.LostRuns) > lostMemory {
		j.LostRuns = j.LostRuns[len(j.LostRuns)-lostMemory:]
	}
}

// endedRun is a run that ended, by its key's hash (16 bytes rather than
// 64: a fleet's job keeps lostMemory of them; two keys of one job sharing
// a 64-bit hash within a minute is not a concern), and when (Unix
// nanoseconds).
type endedRun struct {
	key uint64
	at  int64
}

// endedSeed hashes run keys for endedRun; the hashes are not saved.
var endedSeed = maphash.MakeSeed()
