package model

import (
	"maps"
	"slices"
	"time"
)

// Saved is a whole state made of values that never change (those of
// Changes): the saver keeps the last state it saved as one, and scrapes
// render it. With returns a new one; readers of the old one are undisturbed.
type Saved struct {
	jobs     *viewTable
	names    []string // sorted
	sources  map[string]*SourceView
	srcNames []string
	retired  map[string]SourceState
}

// With returns s with c applied; s is not changed.
func (s *Saved) With(c *Changes) *Saved {
	if c.Empty() {
		return s
	}
	n := &Saved{}
	if s == nil || c.Full {
		n.jobs, n.sources, n.retired = newViewTable(c.Jobs), maps.Clone(c.Sources), c.Retired
	} else {
		n.jobs, n.sources, n.retired = s.jobs.with(c.RemovedJobs, c.Jobs), maps.Clone(s.sources), s.retired
		n.names, n.srcNames = s.names, s.srcNames
		for _, name := range c.RemovedSources {
			delete(n.sources, name)
		}
		maps.Copy(n.sources, c.Sources)
		if c.Retired != nil {
			n.retired = c.Retired
		}
	}
	if n.sources == nil {
		n.sources = map[string]*SourceView{}
	}
	if len(n.names) != n.jobs.len() || len(c.RemovedJobs) > 0 || !s.hasJobs(c.Jobs) {
		n.names = slices.Sorted(n.jobs.names)
	}
	if len(n.srcNames) != len(n.sources) || len(c.RemovedSources) > 0 || !allIn(c.Sources, s.sourcesOrNil()) {
		n.srcNames = slices.Sorted(maps.Keys(n.sources))
	}
	return n
}

// hasJobs reports whether s has every job of m.
func (s *Saved) hasJobs(m map[string]*JobView) bool {
	for name := range m {
		if s == nil || !s.jobs.has(name) {
			return false
		}
	}
	return true
}

func (s *Saved) sourcesOrNil() map[string]*SourceView {
	if s == nil {
		return nil
	}
	return s.sources
}

// allIn reports whether every key of m is a key of in.
func allIn[V any](m, in map[string]V) bool {
	for k := range m {
		if _, ok := in[k]; !ok {
			return false
		}
	}
	return true
}

// JobNames are the jobs, sorted.
func (s *Saved) JobNames() []string { return s.names }

// Job is one job's saved state (nil: none): its decided state and the
// records it holds, as saved; JobView.Shown is what scrapes show of it.
func (s *Saved) Job(name string) *JobView { return s.jobs.get(name) }

// Sources are the sources' saved states, sorted by name.
func (s *Saved) Sources() []*SourceView {
	out := make([]*SourceView, len(s.srcNames))
	for i, n := range s.srcNames {
		out[i] = s.sources[n]
	}
	return out
}

// Retired are the saved states of sources no longer configured.
func (s *Saved) Retired() map[string]SourceState { return s.retired }

// View is what the collector renders, jobs and sources sorted by name,
// each job as Shown: with the facts of the records it holds. The views
// share maps and slices with s, which nobody changes.
func (s *Saved) View() ([]JobView, []SourceView) {
	if s == nil {
		return nil, nil
	}
	jobs := make([]JobView, len(s.names))
	for i, n := range s.names {
		jobs[i] = *s.jobs.get(n).Shown()
	}
	srcs := make([]SourceView, len(s.srcNames))
	for i, n := range s.srcNames {
		srcs[i] = *s.sources[n]
	}
	return jobs, srcs
}

// view is j's state now, for saving and rendering, decided until decided
// (reapIndex.decidedOf): it shares the state, which j copies before it next
// changes (own).
func (j *job) view(decided time.Time) *JobView {
	v := &JobView{Spec: j.spec, JobState: j.JobState}
	j.shared.Store(true)
	v.Recent, v.DurationHistory = j.history.recent.ordered(), j.history.durations.ordered()
	v.Open = j.runs.sorted()
	if v.Pending = j.held.pending(); v.Pending != nil {
		v.facts = &factsMemo{ended: slices.Clone(j.runs.ended.buf)}
	}
	v.DecidedUntil = decided
	return v
}

func (o *orderer) sourceView(name string) *SourceView {
	s := o.marks.sources[name]
	return &SourceView{Name: name, Type: s.typ, Up: s.up, Reason: s.reason, SourceState: s.SourceState.clone(), Observations: s.observations, clock: s.clock}
}
