package model

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"
)

// heldRecords are the records a job holds for its watermark, which the
// orderer releases to the job's state machine once every source that
// reports the job has passed them (eventtime.go). They live with their
// job: most jobs hold none, and a map of them beside the jobs cost a
// lookup a record.
type heldRecords struct {
	// list is in the order the records are applied in (compareHeld) but
	// for those added since sortedLen while unsorted (see add).
	list      []Held
	sortedLen int
	// declining counts the held records that may say a run declined to
	// run (declines), so that a start looks through them only when one is
	// held.
	declining int
	unsorted  bool
	// shared: a view holds list[:len(list)] (JobView.Pending), which must
	// not be written; appending beyond it is safe. A view shares the
	// records rather than copying them: at 50,000 jobs each holding its
	// runs in progress' starts, the copies were 15 MB. Atomic: views are
	// also taken under the tracker's read lock.
	shared atomic.Bool
}

// pending is the held records for a view, shared with it (nil: none).
func (q *heldRecords) pending() []Held {
	if len(q.list) == 0 {
		return nil
	}
	q.shared.Store(true)
	return q.list[:len(q.list):len(q.list)]
}

// own gives q a list of its own before it is written in place.
func (q *heldRecords) own() {
	if q.shared.Load() {
		q.list = slices.Clone(q.list)
		q.shared.Store(false)
	}
}

// reset lets every held record go.
func (q *heldRecords) reset() {
	if q.shared.Load() {
		q.list = nil
		q.shared.Store(false)
	}
	clear(q.list) // drop the strings they hold
	q.list, q.declining, q.unsorted = q.list[:0], 0, false
}

// due is how many of the first records are dated up to to.
func (q *heldRecords) due(to time.Time) int {
	n := 0
	for n < len(q.list) && !q.list[n].Time().After(to) {
		n++
	}
	return n
}

// release hands the first n records to apply, in their order, and lets
// them go: all of them, with the list's memory (most jobs hold records
// only while a source catches up).
func (q *heldRecords) release(n int, apply func(h *Held)) {
	if n == 0 {
		return
	}
	for i := range q.list[:n] {
		h := &q.list[i]
		apply(h)
		if h.declines() {
			q.declining--
		}
	}
	switch {
	case n == len(q.list):
		q.list = nil
		q.shared.Store(false)
	case q.shared.Load():
		q.list = slices.Clone(q.list[n:])
		q.shared.Store(false)
	default:
		clear(q.list[:n]) // drop the strings they hold
		q.list = slices.Delete(q.list, 0, n)
	}
}

// add keeps ev in its job's pending records. They are in time order again
// once Apply has handed over its batch (sorted), not after each record: a
// source that reads behind another puts most of its records before those
// of the other, and moving those for each was most of a catch-up's cost.
func (q *heldRecords) add(ev *Event, source string) { q.hold(NewHeld(ev, source)) }

func (q *heldRecords) hold(h Held) {
	if n := len(q.list); !q.unsorted && n > 0 && compareHeld(&h, &q.list[n-1]) < 0 {
		q.unsorted, q.sortedLen = true, n
	}
	q.list = append(q.list, h)
	if h.declines() {
		q.declining++
	}
}

// restore holds a job's records as a saved state had them, reporting
// whether it holds any; sort puts them in order.
func (q *heldRecords) restore(held []Held) bool {
	for _, h := range held {
		q.hold(h)
	}
	return len(q.list) > 0
}

// sort puts the job's pending records in the order they are applied in:
// the records held since the last sort are sorted, then merged with those
// before them, from where they begin among them.
func (q *heldRecords) sort() {
	if !q.unsorted {
		return
	}
	q.unsorted = false
	q.own()
	head, tail := q.list[:q.sortedLen], q.list[q.sortedLen:]
	cmpHeld := func(a, b Held) int { return compareHeld(&a, &b) }
	if !slices.IsSortedFunc(tail, cmpHeld) {
		slices.SortFunc(tail, cmpHeld)
	}
	k, _ := slices.BinarySearchFunc(head, &tail[0], func(a Held, b *Held) int { return compareHeld(&a, b) })
	rest := slices.Clone(head[k:]) // what the new records go among
	out := q.list[k:k]
	for len(rest) > 0 && len(tail) > 0 {
		if compareHeld(&tail[0], &rest[0]) < 0 {
			out, tail = append(out, tail[0]), tail[1:]
		} else {
			out, rest = append(out, rest[0]), rest[1:]
		}
	}
	// out never overtakes tail: it has taken fewer records than rest and
	// tail held together, and tail starts where rest ended.
	out = append(out, rest...)
	_ = append(out, tail...)
}

// before reports whether every record the job holds goes before ev of
// source, as applied.
func (q *heldRecords) before(ev *Event, source string) bool {
	n := len(q.list)
	if n == 0 {
		return true
	}
	return !q.unsorted && compareHeldTo(&q.list[n-1], ev, source) <= 0
}

// declined reports whether a record held for the job's watermark, at
// or after r's start, says that r declined to run: an end of r with status
// skipped, or a skip naming r's run id.
func (q *heldRecords) declined(r *Run) bool {
	if q.declining == 0 {
		return false // the common case: no such record held, nothing to look through
	}
	return slices.ContainsFunc(q.list, func(h Held) bool {
		if !h.declines() || h.Time().Before(r.Start.Time()) {
			return false
		}
		if h.kind == End {
			ev := h.Event()
			return r.endedBy(&ev)
		}
		return h.runID == r.RunID
	})
}

// endOf reports whether the end of r is among the job's records held for
// its watermark: its process is gone because it ended.
func (q *heldRecords) endOf(r *Run) bool {
	return slices.ContainsFunc(q.list, func(h Held) bool {
		return h.kind == End && (runKey(h.runID, h.host, h.PID()) == r.Key() || h.host == r.Host && h.PID() == r.PID)
	})
}

// declines reports whether ev may say that a run declined to run: an end
// with status skipped, or a skip naming a run id.
func declines(ev *Event) bool {
	return ev.Kind == End && ev.Result == Skipped || ev.Kind == Skip && ev.RunID != ""
}

// kindOrder orders one run's records of one instant: its start before what
// ends it (jobwatch run writes a start and then, when the lock is held, a
// skip of the same run, often in the same millisecond).
var kindOrder = [...]int{Start: 0, LockLost: 1, End: 2, Skip: 3}

func kindRank(k Kind) int {
	if int(k) < len(kindOrder) {
		return kindOrder[k]
	}
	return len(kindOrder)
}

// compareEvents is the order records are applied in: by time, then by run
// and kind, then by everything they hold, so that records of one instant
// are applied in the same order whichever source handed them over first.
func compareEvents(a, b *Event) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if a.RunID != b.RunID || a.Host != b.Host || a.PID != b.PID {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID))
	}
	if c := cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Result, b.Result), cmp.Compare(a.ExitCode, b.ExitCode), compareBool(a.HasExitCode, b.HasExitCode),
		cmp.Compare(a.Duration, b.Duration), compareBool(a.HasDuration, b.HasDuration),
		cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.SkipLabel, b.SkipLabel), cmp.Compare(a.Lock, b.Lock),
		cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.HolderPID, b.HolderPID), cmp.Compare(a.LockTTL, b.LockTTL),
		cmp.Compare(a.Output, b.Output),
		cmp.Compare(a.OutputRef, b.OutputRef),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
