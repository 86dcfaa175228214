package model

import (
	"math"
	"time"
)

// The reap's walk. Every few seconds Reap decides what each job's
// watermark allows; for most jobs most of the time that changes nothing
// but the time the job has decided to (a job every hour, between its
// runs), and visiting 10,000 jobs to learn it was the largest part of a
// stream's CPU after the saver's (a cache miss a job). So Reap walks a
// compact list instead (reapIndex), one entry a job, holding until when in
// event time the job is quiet: no record held, no run open, no slot due. A
// quiet job is passed over while its source's watermark is before that
// time, and visited once it is, or as soon as anything changes it
// (orderer.changed). The time it would have decided to is the reap's per
// source (reapIndex.to), which a passed-over job takes when a record of it
// comes (catchUp) and shows in its views (decidedOf): what was late stays
// late. TestReapPassesOverQuietJobs compares it with a reap that visits
// every job (export_test.go).

// reapEntry is one job in the reap's list.
type reapEntry struct {
	// quietUntil: deciding the job at an event time before it (Unix
	// nanoseconds) only moves its decided time; 0: visit it every reap.
	quietUntil int64
	key        int32 // its one source's (or none's) index in reapIndex.keys
	j          *job  // nil: forgotten since the list was built
}

// reapIndex is the reap's list of jobs, and what the reaps decided each
// source's jobs to.
type reapIndex struct {
	list      []reapEntry
	stale     bool // jobs came or went: rebuild it
	forgotten int  // entries of jobs forgotten since it was built
	keys      []string
	keyIndex  map[string]int32
	to        map[string]time.Time
}

// build lists every job, each to be visited at the next reap.
func (r *reapIndex) build(jobs map[string]*job) {
	r.list = r.list[:0]
	for _, j := range jobs {
		j.reapSlot = len(r.list)
		r.list = append(r.list, reapEntry{j: j})
	}
	r.stale, r.forgotten = false, 0
}

// wake has the next reap visit j: it changed.
func (r *reapIndex) wake(j *job) {
	if s := j.reapSlot; s < len(r.list) && r.list[s].j == j {
		r.list[s].quietUntil = 0
	}
}

// key is the index of the memo key of j's one source (decidableIn),
// and false when it has more than one: such a job is visited every reap.
func (r *reapIndex) key(j *job) (int32, bool) {
	key, single := memoKey(j)
	if !single {
		return 0, false
	}
	i, ok := r.keyIndex[key]
	if !ok {
		if r.keyIndex == nil {
			r.keyIndex = map[string]int32{}
		}
		i = int32(len(r.keys))
		r.keys = append(r.keys, key)
		r.keyIndex[key] = i
	}
	return i, true
}

// quietUntil is the event time before which deciding j only moves its
// decided time (0: none, visit it every reap): the next slot of its
// calendar (a bound: the slot counts as missed only after its grace). A
// job with a run open is visited every reap: its timeout, abandonment and
// process are looked at.
func quietUntil(j *job) int64 {
	if len(j.held.list) > 0 || len(j.runs.open) > 0 || !j.Retired.IsZero() {
		return 0
	}
	until := int64(math.MaxInt64)
	if sched := j.calendar(); sched != nil {
		if j.SlotsCheckedUntil.IsZero() {
			return 0
		}
		if next := sched.Next(j.SlotsCheckedUntil.Time()); !next.IsZero() {
			until = min(until, next.UnixNano())
		}
	}
	return until
}

// passOver reports whether the reap may pass over e: quiet until after
// what its source's watermark allows now (keyTo: the pass's, per key).
func (o *orderer) passOver(e *reapEntry, keyTo []reapKeyTo, memo decidableMemo, now time.Time) bool {
	if e.quietUntil == 0 {
		return false
	}
	k := &keyTo[e.key]
	if !k.known {
		to, ok := o.marks.decidableIn(memo, e.j, now)
		k.to, k.ok, k.known = to.UnixNano(), ok, true
	}
	return !k.ok || k.to < e.quietUntil
}

// reapKeyTo is what one key's watermark allows in a reap.
type reapKeyTo struct {
	to        int64
	ok, known bool
}

// visited classifies a job the reap has just visited.
func (r *reapIndex) visited(e *reapEntry) {
	key, single := r.key(e.j)
	e.key, e.quietUntil = key, 0
	if single {
		e.quietUntil = quietUntil(e.j)
	}
}

// keep keeps what the pass decided each key's jobs to.
func (r *reapIndex) keep(memo decidableMemo) {
	for key, m := range memo {
		if m.ok {
			if r.to == nil {
				r.to = map[string]time.Time{}
			}
			r.to[key] = m.to
		}
	}
}

// decidedOf is the time j has decided to, counting the reaps that passed
// over it.
func (r *reapIndex) decidedOf(j *job) time.Time {
	d := j.decided
	key, single := memoKey(j)
	if !single {
		return d
	}
	if to, ok := r.to[key]; ok && to.After(d) {
		return to
	}
	return d
}

// catchUp gives j the decided time of the reaps that passed over it,
// before a record of it is taken (or a reload starts the watermarks
// again): a record dated before it is late, as it was when every reap
// visited every job.
func (r *reapIndex) catchUp(j *job) {
	j.decided = r.decidedOf(j)
}
