package model

import (
	"maps"
	"slices"
	"time"
)

// Changes are the jobs and sources whose state changed since the last call
// of Tracker.Changes, taken at one instant (under the lock that applies a
// batch with its position), so that a save of them is atomic across events
// and positions. Every value is a copy made when it was taken and never
// changed afterwards: the saver writes it and scrapes render it.
type Changes struct {
	// Full: Jobs and Sources hold every job and source (after Configure or
	// Restore); those not in them are gone.
	Full    bool
	Jobs    map[string]*JobView
	Sources map[string]*SourceView
	// RemovedJobs and RemovedSources are no longer configured.
	RemovedJobs    []string
	RemovedSources []string
	// Retired, when not nil, is the new set of retired sources (all of them).
	Retired map[string]SourceState
}

// Empty reports whether c holds no change.
func (c *Changes) Empty() bool {
	return c == nil || !c.Full && len(c.Jobs) == 0 && len(c.Sources) == 0 && len(c.RemovedJobs) == 0 &&
		len(c.RemovedSources) == 0 && c.Retired == nil
}

// Merge returns the changes of c followed by newer: what a saver must write
// when saving c failed and newer changes came since. c and newer are left as
// they are.
func (c *Changes) Merge(newer *Changes) *Changes {
	switch {
	case c.Empty():
		return newer
	case newer.Empty():
		return c
	case newer.Full:
		return newer
	}
	m := &Changes{Full: c.Full, Jobs: maps.Clone(c.Jobs), Sources: maps.Clone(c.Sources), Retired: c.Retired}
	if m.Jobs == nil {
		m.Jobs = map[string]*JobView{}
	}
	if m.Sources == nil {
		m.Sources = map[string]*SourceView{}
	}
	m.RemovedJobs = mergeRemoved(c.RemovedJobs, newer.RemovedJobs, newer.Jobs, m.Jobs, m.Full)
	m.RemovedSources = mergeRemoved(c.RemovedSources, newer.RemovedSources, newer.Sources, m.Sources, m.Full)
	maps.Copy(m.Jobs, newer.Jobs)
	maps.Copy(m.Sources, newer.Sources)
	if newer.Retired != nil {
		m.Retired = newer.Retired
	}
	return m
}

// mergeRemoved: names removed by either, but not those present again in
// newer; the removed ones are deleted from merged.
func mergeRemoved[V any](older, newer []string, present, merged map[string]V, full bool) []string {
	var out []string
	for _, n := range older {
		if _, back := present[n]; !back && !full {
			out = append(out, n)
		}
	}
	for _, n := range newer {
		delete(merged, n)
		if !full && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// markJob records that j's saved state changed.
func (t *Tracker) markJob(j *job) {
	t.wakeReap(j)
	if !j.dirty {
		j.dirty = true
		t.dirty = append(t.dirty, j)
	}
	t.signal() // after a verdict marked it, a fact is signalled at once too
}

// markSource records that a source's saved state (or health) changed.
func (t *Tracker) markSource(name string) {
	if t.dirtySources == nil {
		t.dirtySources = map[string]bool{}
	}
	t.dirtySources[name] = true
	t.signal()
}

// changedAll marks everything changed: the next Changes are Full.
func (t *Tracker) changedAll() {
	t.full = true
	t.retiredChanged = true
	t.signal()
}

// signal tells the saver that something changed, once between two calls
// of Changes: a stream of batches changes the state at every one, and
// waking the saver for each (20 times a second in a stream of small
// writes) cost more than the commits it schedules.
//
// A change made while deciding (Reap, DecideHeld: verdicts, whose facts
// were shown when their records were read) signals Decided instead: the
// saver commits it with the next change or a moment later, so that under
// a stream the commits its budget allows go to facts (a record's verdict,
// two seconds after its fact, took a commit of its own, and a stream of
// live records spent the budget twice as fast).
func (t *Tracker) signal() {
	if t.verdictsOnly {
		if !t.decidedSignalled {
			t.decidedSignalled = true
			select {
			case t.decided <- struct{}{}:
			default:
			}
		}
		return
	}
	if t.signalled {
		return
	}
	t.signalled = true
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Changed is signalled when something changes after Changes was called,
// once until Changes is called again.
func (t *Tracker) Changed() <-chan struct{} { return t.notify }

// Decided is signalled when verdicts alone change after Changes was
// called (see signal), once until Changes is called again: the change is
// to be committed, but need not be at once.
func (t *Tracker) Decided() <-chan struct{} { return t.decided }

// deciding marks the changes made until done as verdicts (see signal).
func (t *Tracker) deciding() (done func()) {
	t.verdictsOnly = true
	return func() { t.verdictsOnly = false }
}

// Changes returns what changed since the last call (nil when nothing did),
// as values taken now, and starts a new set. It copies the changed jobs
// only.
func (t *Tracker) Changes() *Changes {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &Changes{Full: t.full, Jobs: map[string]*JobView{}, Sources: map[string]*SourceView{}}
	if t.full {
		for _, j := range t.jobs {
			c.Jobs[j.spec.Name] = j.view(t.decidedOf(j))
		}
		for name := range t.sources {
			c.Sources[name] = t.sourceView(name)
		}
	} else {
		for _, j := range t.dirty {
			if t.jobs[j.spec.Name] == j {
				c.Jobs[j.spec.Name] = j.view(t.decidedOf(j))
			}
		}
		for name := range t.dirtySources {
			if t.sources[name] != nil {
				c.Sources[name] = t.sourceView(name)
			}
		}
		c.RemovedJobs = slices.Sorted(maps.Keys(t.removedJobs))
		c.RemovedSources = slices.Sorted(maps.Keys(t.removedSources))
	}
	if t.retiredChanged {
		c.Retired = make(map[string]SourceState, len(t.retired))
		for n, r := range t.retired {
			c.Retired[n] = r.clone()
		}
	}
	for _, j := range t.dirty {
		j.dirty = false
	}
	t.dirty = t.dirty[:0]
	t.dirtySources, t.removedJobs, t.removedSources = nil, nil, nil
	t.full, t.retiredChanged, t.signalled, t.decidedSignalled = false, false, false, false
	if c.Empty() {
		return nil
	}
	return c
}

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
// (Tracker.decidedOf): it shares the state, which j copies before it next
// changes (own).
func (j *job) view(decided time.Time) *JobView {
	v := &JobView{Spec: j.spec, JobState: j.JobState}
	j.shared.Store(true)
	v.Recent, v.DurationHistory = j.recent.ordered(), j.durations.ordered()
	v.Open = j.sortedOpen()
	if len(j.pending) > 0 {
		v.Pending = slices.Clone(j.pending)
		v.ended, v.facts = slices.Clone(j.ended.buf), &factsMemo{}
	}
	v.DecidedUntil = decided
	return v
}

// sortedOpen copies the runs in progress, sorted by start time.
func (j *job) sortedOpen() []Run {
	if len(j.open) == 0 {
		return nil
	}
	open := make([]Run, len(j.open))
	for i, r := range j.open {
		open[i] = *r // j.open is sorted
	}
	return open
}

func (t *Tracker) sourceView(name string) *SourceView {
	s := t.sources[name]
	return &SourceView{Name: name, Type: s.typ, Up: s.up, Reason: s.reason, SourceState: s.SourceState.clone(), Observations: s.observations, clock: s.clock}
}
