package model

import (
	"maps"
	"slices"
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

// changeLog is what changed since the saver last took the changes
// (Tracker.Changes): the jobs and sources to save again, those removed,
// and the signals that wake the saver.
type changeLog struct {
	dirty          []*job
	dirtySources   map[string]bool
	removedJobs    map[string]bool
	removedSources map[string]bool
	full           bool // everything changed
	retiredChanged bool
	notify         chan struct{}
	signalled      bool // notify was signalled since the last Changes
	// decided and decidedSignalled are notify's and signalled's for
	// verdicts alone, made while verdictsOnly (see signal).
	decided          chan struct{}
	decidedSignalled bool
	verdictsOnly     bool
}

func newChangeLog() changeLog {
	return changeLog{notify: make(chan struct{}, 1), decided: make(chan struct{}, 1)}
}

// markJob records that j's saved state changed (orderer.changed also
// has the reap visit it).
func (c *changeLog) markJob(j *job) {
	if !j.dirty {
		j.dirty = true
		c.dirty = append(c.dirty, j)
	}
	c.signal() // after a verdict marked it, a fact is signalled at once too
}

// markSource records that a source's saved state (or health) changed.
func (c *changeLog) markSource(name string) {
	if c.dirtySources == nil {
		c.dirtySources = map[string]bool{}
	}
	c.dirtySources[name] = true
	c.signal()
}

// changedAll marks everything changed: the next Changes are Full.
func (c *changeLog) changedAll() {
	c.full = true
	c.retiredChanged = true
	c.signal()
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
func (c *changeLog) signal() {
	if c.verdictsOnly {
		if !c.decidedSignalled {
			c.decidedSignalled = true
			select {
			case c.decided <- struct{}{}:
			default:
			}
		}
		return
	}
	if c.signalled {
		return
	}
	c.signalled = true
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Changed is signalled when something changes after Changes was called,
// once until Changes is called again.
func (t *Tracker) Changed() <-chan struct{} { return t.log.notify }

// Decided is signalled when verdicts alone change after Changes was
// called (see signal), once until Changes is called again: the change is
// to be committed, but need not be at once.
func (t *Tracker) Decided() <-chan struct{} { return t.log.decided }

// deciding marks the changes made until done as verdicts (see signal).
func (c *changeLog) deciding() (done func()) {
	c.verdictsOnly = true
	return func() { c.verdictsOnly = false }
}

// Changes returns what changed since the last call (nil when nothing did),
// as values taken now, and starts a new set. It copies the changed jobs
// only.
func (t *Tracker) Changes() *Changes {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, o := &t.log, t.order
	c := &Changes{Full: l.full, Jobs: map[string]*JobView{}, Sources: map[string]*SourceView{}}
	if l.full {
		for _, j := range o.jobs {
			c.Jobs[j.spec.Name] = j.view(o.reap.decidedOf(j))
		}
		for name := range o.marks.sources {
			c.Sources[name] = o.sourceView(name)
		}
	} else {
		for _, j := range l.dirty {
			if o.jobs[j.spec.Name] == j {
				c.Jobs[j.spec.Name] = j.view(o.reap.decidedOf(j))
			}
		}
		for name := range l.dirtySources {
			if o.marks.sources[name] != nil {
				c.Sources[name] = o.sourceView(name)
			}
		}
		c.RemovedJobs = slices.Sorted(maps.Keys(l.removedJobs))
		c.RemovedSources = slices.Sorted(maps.Keys(l.removedSources))
	}
	if l.retiredChanged {
		c.Retired = make(map[string]SourceState, len(t.retired))
		for n, r := range t.retired {
			c.Retired[n] = r.clone()
		}
	}
	l.reset()
	if c.Empty() {
		return nil
	}
	return c
}

// reset starts a new set of changes: the last were taken.
func (c *changeLog) reset() {
	for _, j := range c.dirty {
		j.dirty = false
	}
	c.dirty = c.dirty[:0]
	c.dirtySources, c.removedJobs, c.removedSources = nil, nil, nil
	c.full, c.retiredChanged, c.signalled, c.decidedSignalled = false, false, false, false
}

// removed records name as removed in set (removedJobs, removedSources).
func removed(set *map[string]bool, name string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[name] = true
}
