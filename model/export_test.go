package model

import (
	"maps"
	"slices"
	"time"
)

// The references the model's shortcuts are compared with. They live here,
// not in the production code: the tests wrap the orderer's parts.

// applyHolding is Apply holding every record that is not late until the
// batch's end, deciding none in place (orderer.decideInPlace): what
// deciding in place must give (TestDecideInPlaceAsHeld).
func (t *Tracker) applyHolding(b Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := t.order
	o.applyBatch(&b, func(bj *batchJob, name string, ev *Event, now time.Time) {
		if !o.admit(bj.j, name, ev, now) {
			bj.j.held.add(ev, name)
		}
		o.changed(bj.j)
	})
}

// reapEvery is Reap visiting every job, passing over none: what the reap's
// index must give (TestReapPassesOverQuietJobs).
func (t *Tracker) reapEvery() {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.log.deciding()()
	o, now, memo := t.order, t.clock.now(), decidableMemo{}
	for _, name := range slices.Sorted(maps.Keys(o.jobs)) {
		if j := o.jobs[name]; !o.forgetRetired(name, j, now) {
			o.reapJob(memo, j, now)
		}
	}
	o.reap.keep(memo)
}

// passable is how many jobs the next Reap, at the clock's now, passes
// over.
func (t *Tracker) passable() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, now := t.order, t.clock.now()
	if o.reap.stale {
		return 0 // the reap rebuilds its index: it visits every job
	}
	memo, keyTo, n := decidableMemo{}, make([]reapKeyTo, len(o.reap.keys)), 0
	for i := range o.reap.list {
		if e := &o.reap.list[i]; e.j != nil && o.passOver(e, keyTo, memo, now) {
			n++
		}
	}
	return n
}
