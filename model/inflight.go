package model

import (
	"slices"
)

// MaxOpenRuns is the one bound on runs in progress, wherever they are
// followed: the model keeps at most this many per job, and a source that
// follows runs itself between records (the journal's started units and cron
// children, a job_runs table's rows not yet finished) at most this many per
// source. Runs whose end never comes (records lost, no timeout configured)
// then cannot grow the model, a source's saved position, the queries a
// source makes every poll, or the series of
// jobwatch_job_run_start_timestamp_seconds, without bound. Beyond it the
// oldest run is let go: the model closes it as lost, a source stops
// following it (and the model closes it as lost at its job's timeout).
const MaxOpenRuns = 1000

// Aged is what InFlight orders runs by: Before reports whether the
// receiver is older than o (started earlier, ties broken by a stable key),
// so that the order is total and the same on every run.
type Aged[V any] interface {
	Before(o V) bool
}

// InFlight holds runs in progress by key (a run id, or host and PID), at
// most MaxOpenRuns of them: adding one more lets the oldest go. It is a
// map, so it can be read with index expressions and range; add through Add
// to keep the bound. It is not safe for concurrent use.
type InFlight[K comparable, V Aged[V]] map[K]V

// Add puts v under k. When that makes more than MaxOpenRuns, the oldest
// other run is removed and returned, ok true: the caller logs it, or
// closes it as lost.
func (f InFlight[K, V]) Add(k K, v V) (evicted V, ok bool) {
	if _, dup := f[k]; !dup && len(f) >= MaxOpenRuns {
		if ek, ev, found := f.Oldest(); found {
			delete(f, ek)
			evicted, ok = ev, true
		}
	}
	f[k] = v
	return evicted, ok
}

// Oldest returns the oldest run and its key.
func (f InFlight[K, V]) Oldest() (k K, v V, ok bool) {
	for key, run := range f {
		if !ok || run.Before(v) {
			k, v, ok = key, run, true
		}
	}
	return k, v, ok
}

// Sorted returns the runs oldest first: a deterministic order, for saved
// positions, snapshots and views.
func (f InFlight[K, V]) Sorted() []V {
	keys := f.sortedKeys()
	if keys == nil {
		return nil
	}
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = f[k]
	}
	return out
}

func (f InFlight[K, V]) sortedKeys() []K {
	if len(f) == 0 {
		return nil
	}
	keys := make([]K, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		switch {
		case f[a].Before(f[b]):
			return -1
		case f[b].Before(f[a]):
			return 1
		}
		return 0
	})
	return keys
}

// Trim lets the oldest runs go until at most MaxOpenRuns are left, and
// returns how many it let go: for runs added without Add (a saved position
// read back, a poll's result).
func (f InFlight[K, V]) Trim() int { return f.TrimTo(MaxOpenRuns) }

// TrimTo is Trim to limit runs: for a collection that holds the runs of
// several jobs (limit MaxOpenRuns times the jobs).
func (f InFlight[K, V]) TrimTo(limit int) int {
	drop := len(f) - limit
	if drop <= 0 {
		return 0
	}
	for _, k := range f.sortedKeys()[:drop] {
		delete(f, k)
	}
	return drop
}
