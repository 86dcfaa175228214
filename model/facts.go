package model

import (
	"slices"
)

// Facts at once, verdicts at the watermark. What a record says (a run
// started, with its host and PID; a run ended, with its result, exit code
// and duration; a skip and its label; a lock lost) is true whatever the
// records around it say, so it is shown the moment the record is read,
// from the records a job holds for its watermark (JobView.Pending). What a
// record means against the schedule and the other runs (the slot it fills,
// missed, unexpected and duplicate runs, overlaps, runs in a row, lost and
// abandoned runs) waits for the watermark (eventtime.go): those figures of
// a shown view are its decided state's. A held record is shown with the
// rules that decide it (the run it closes, a second end of one run not
// counted, a run that declined to run counted as a skip), over the
// decided state: when the watermark passes it, the decided state takes it
// in and the shown figures stay where they were, counted once. The state
// file saves the decided state and the records held, never the facts
// shown: a restart shows them again from the held records.
// docs/schedules.md, "Facts at once, verdicts at the watermark".

// factsMemo holds a job's latest ends, which the facts of a view's
// Pending are checked against: only a view with records held has one. The
// view it shows is not kept: while a restart's records wait for the
// watermark every job holds some, and a shown copy kept with each view was
// a third copy of every job's state (the collector's cache keeps its
// rendering, not the view: collector/segments.go).
type factsMemo struct {
	ended []endedRun
}

// Shown is the job as scrapes show it: its decided state with the facts of
// the records it holds for its watermark (v itself when it holds none), a
// copy made at each call. The verdicts (slots, missed, unexpected and
// duplicate runs, overlaps, runs in a row) are the decided state's.
func (v *JobView) Shown() *JobView {
	if v == nil || len(v.Pending) == 0 {
		return v
	}
	return v.withFacts()
}

// withFacts applies the facts of v's held records, in the order they will
// be decided, to a copy of v.
func (v *JobView) withFacts() *JobView {
	s := v.scratch()
	for i := range v.Pending {
		ev := v.Pending[i].Event()
		ev.Job = v.Spec.Name
		s.fact(&ev)
	}
	out := *v
	out.facts = nil
	st := v.JobState.cloneSharingDurations()
	st.takeFacts(s.JobState)
	out.JobState = st
	out.Recent, out.DurationHistory = s.history.recent.ordered(), s.history.durations.ordered()
	out.Open = s.runs.sorted()
	return &out
}

// scratch is a job holding v's state, to apply facts to: its own copy of
// everything a fact changes, the histogram's buckets shared until a fact
// observes a duration (job.finish).
func (v *JobView) scratch() *job {
	s := &job{spec: v.Spec, JobState: v.JobState.cloneSharingDurations(), durationsShared: true, held: heldRecords{list: v.Pending}}
	for i := range v.Pending {
		if v.Pending[i].declines() {
			s.held.declining++
		}
	}
	for i := range v.Open {
		r := v.Open[i]
		s.runs.open = append(s.runs.open, &r)
	}
	s.history.recent.load(v.Recent, MaxRecentRuns)
	s.history.durations.load(v.DurationHistory, MaxDurationHistory)
	if v.facts != nil {
		s.runs.ended.buf = slices.Clone(v.facts.ended)
	}
	return s
}

// takeFacts copies the figures that are facts from f, leaving the
// verdicts as they are.
func (j *JobState) takeFacts(f *JobState) {
	j.LastStart = f.LastStart
	j.LastSuccess, j.LastSuccessStart, j.LastFailure = f.LastSuccess, f.LastSuccessStart, f.LastFailure
	j.LastUnknown, j.LastUnknownStart = f.LastUnknown, f.LastUnknownStart
	j.LastDuration, j.HasLastDuration = f.LastDuration, f.HasLastDuration
	j.LastExitCode, j.HasLastExitCode = f.LastExitCode, f.HasLastExitCode
	j.RunCounts, j.Durations = f.RunCounts, f.Durations
	j.Skips, j.SkipCounts, j.SkipsDeclared = f.Skips, f.SkipCounts, f.SkipsDeclared
	j.LockLostCounts, j.LockTTL = f.LockLostCounts, f.LockTTL
}

// fact applies what the held record ev says to the scratch job j, as
// apply will when its watermark passes it, judging nothing against the
// schedule or the other runs.
func (j *job) fact(ev *Event) {
	switch ev.Kind {
	case Start:
		j.factStart(ev)
	case End:
		j.takeEnd(ev)
	case Skip:
		j.applySkip(ev)
	case LockLost:
		if i := slices.Index(LockLayers, ev.Lock); i >= 0 {
			j.LockLostCounts[i]++
		}
	}
}

// factStart shows a run in progress (applyStart's run, without its slot
// or overlap).
func (j *job) factStart(ev *Event) {
	if j.runs.at(runKey(ev.RunID, ev.Host, ev.PID)) >= 0 {
		return
	}
	r := &Run{RunID: ev.RunID, Host: ev.Host, PID: ev.PID, Start: StampOf(ev.Time), Lease: ev.LockTTL, EndUnlogged: ev.EndUnlogged}
	if j.held.declined(r) {
		return
	}
	j.runs.add(r)
	j.takeStart(ev)
}
