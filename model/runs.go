package model

import (
	"hash/maphash"
	"slices"
	"time"
)

// RunKey identifies a run: by its run id when the records carry one, else
// by host and PID. A struct, not a string, so applying a record allocates
// nothing for it.
type RunKey struct {
	RunID string
	Host  string
	PID   int
}

func runKey(runID, host string, pid int) RunKey {
	if runID != "" {
		return RunKey{RunID: runID}
	}
	return RunKey{Host: host, PID: pid}
}

// Before orders runs in progress oldest first, ties broken by key: the
// order of InFlight.Sorted.
func (r *Run) Before(o *Run) bool {
	if !r.Start.Equal(o.Start.Time()) {
		return r.Start.Before(o.Start.Time())
	}
	return r.Key().less(o.Key())
}

// Key is the run's key: its run id, or host and PID.
func (r *Run) Key() RunKey { return runKey(r.RunID, r.Host, r.PID) }

// compareRuns is Before as a comparison, for sorting and searching.
func compareRuns(a, b *Run) int {
	switch {
	case a.Before(b):
		return -1
	case b.Before(a):
		return 1
	}
	return 0
}

func (k RunKey) less(o RunKey) bool {
	if k.RunID != o.RunID {
		return k.RunID < o.RunID
	}
	if k.Host != o.Host {
		return k.Host < o.Host
	}
	return k.PID < o.PID
}

// endedBy reports whether the end record ev names r: by run id, else by
// host and PID when one of them has no run id.
func (r *Run) endedBy(ev *Event) bool {
	if runKey(ev.RunID, ev.Host, ev.PID) == r.Key() {
		return true
	}
	return ev.PID != 0 && r.Host == ev.Host && r.PID == ev.PID && (ev.RunID == "" || r.RunID == "")
}

// openRuns are a job's runs in progress and what is remembered of the
// runs that ended lately.
type openRuns struct {
	// open are the runs in progress, oldest first (Run.Before), at most
	// MaxOpenRuns. A slice, not a map: most jobs have none or one, and a
	// map of one run held 400 bytes.
	open  []*Run
	ended ring[endedRun] // the latest runs that ended, for repeated ends
	// abandonQuiet: no run of the job is abandoned (machine.abandon) at a
	// time up to it, Unix nanoseconds (0: not known); a new run or spec
	// clears it.
	abandonQuiet int64
}

// at is the index of the open run of key, -1 when none is.
func (rs *openRuns) at(key RunKey) int {
	for i, r := range rs.open {
		if r.Key() == key {
			return i
		}
	}
	return -1
}

// add adds a run in progress. When that makes more than MaxOpenRuns,
// the oldest other run is removed and returned, ok true (as InFlight.Add).
func (rs *openRuns) add(r *Run) (evicted *Run, ok bool) {
	if len(rs.open) >= MaxOpenRuns {
		evicted, ok = rs.open[0], true
		rs.open = slices.Delete(rs.open, 0, 1)
	}
	i, _ := slices.BinarySearchFunc(rs.open, r, compareRuns)
	rs.open = slices.Insert(rs.open, i, r)
	rs.abandonQuiet = 0
	return evicted, ok
}

// close removes the open run of key, if there is one.
func (rs *openRuns) close(key RunKey) {
	if i := rs.at(key); i >= 0 {
		rs.open = slices.Delete(rs.open, i, i+1)
	}
}

// find finds the open run an end record closes: by run id, else by host
// and PID.
func (rs *openRuns) find(ev *Event) *Run {
	if i := rs.at(runKey(ev.RunID, ev.Host, ev.PID)); i >= 0 {
		return rs.open[i]
	}
	if ev.PID == 0 {
		return nil
	}
	for _, r := range rs.open {
		if r.endedBy(ev) {
			return r
		}
	}
	return nil
}

// duplicateEndWindow: an end record of a run that ended this recently (by
// the records' times), with no run of that key in progress, repeats that
// end. Only ends that name their run (a run id, or a PID) are compared: two
// ends of a host's runs that carry neither are two runs.
const duplicateEndWindow = time.Minute

// endedJustNow reports whether a run of key ended within duplicateEndWindow
// of t.
func (rs *openRuns) endedJustNow(key RunKey, t time.Time) bool {
	if key.RunID == "" && key.PID == 0 {
		return false
	}
	h, at := maphash.Comparable(endedSeed, key), t.UnixNano()
	for _, e := range rs.ended.buf {
		if e.key == h && time.Duration(at-e.at).Abs() <= duplicateEndWindow {
			return true
		}
	}
	return false
}

// rememberEnd keeps the key of a run that just ended (the latest
// lostMemory of them; not saved: a restart reads each record once).
func (rs *openRuns) rememberEnd(key RunKey, t time.Time) {
	if key.RunID == "" && key.PID == 0 {
		return
	}
	rs.ended.push(endedRun{maphash.Comparable(endedSeed, key), t.UnixNano()}, lostMemory)
}

// sorted copies the runs in progress, sorted by start time.
func (rs *openRuns) sorted() []Run {
	if len(rs.open) == 0 {
		return nil
	}
	open := make([]Run, len(rs.open))
	for i, r := range rs.open {
		open[i] = *r // rs.open is sorted
	}
	return open
}
