package model

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// MaxRecentRuns bounds the finished and skipped runs kept per job for the
// status page.
const MaxRecentRuns = 50

// Skipped is the Result of a RecentRun that was skipped.
const Skipped Result = "skipped"

// RecentRun is one of a job's latest finished or skipped runs.
type RecentRun struct {
	Start       time.Time // zero when unknown (an end record without start or duration)
	End         time.Time // for a skip: when it was skipped
	Duration    time.Duration
	HasDuration bool
	Result      Result
	Host        string
	PID         int
	ExitCode    int
	HasExitCode bool
	// Reason: why it was skipped, or why it ended early (lock_lost).
	Reason string
	// Lock and Holder: the lock layer that refused a skip and who held it.
	Lock, Holder string
	// Output is the end of what the run printed, when a source had it.
	Output string
	// Overlapped: it started while another run of the job was in progress.
	Overlapped bool
}

// remember adds r to the job's recent runs.
func (j *job) remember(r RecentRun) { j.recent.push(r, MaxRecentRuns) }

// RecentRuns are the job's latest finished and skipped runs, oldest first,
// at most MaxRecentRuns.
func (j *JobState) RecentRuns() []RecentRun { return lastN(j.Recent, MaxRecentRuns) }

// LastDurations are the durations of the job's latest finished runs in
// seconds, oldest first, at most MaxDurationHistory.
func (j *JobState) LastDurations() []float64 { return lastN(j.DurationHistory, MaxDurationHistory) }

// ring holds a job's latest n values in place: applying a run writes one
// element and copies nothing. Only a view of the job (taken once per save,
// not once per record) copies it out, oldest first, so views never share
// what the ring overwrites.
type ring[T any] struct {
	buf  []T
	next int // where the next value goes, once buf is full
	// shared: a view holds buf[:len(buf)], which must not be overwritten
	// (appending beyond it is safe: the view does not see that far).
	// Atomic: views are also taken under the tracker's read lock.
	shared atomic.Bool
}

func (r *ring[T]) push(v T, n int) {
	if len(r.buf) < n {
		if len(r.buf) == cap(r.buf) {
			// Grown by half, not doubled: most jobs keep a few runs, and
			// a ring of 200-byte runs is most of a job's memory.
			grown := make([]T, len(r.buf), min(n, len(r.buf)+max(1, len(r.buf)/2)))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, v)
		return
	}
	if r.shared.Load() {
		r.buf = slices.Clone(r.buf)
		r.shared.Store(false)
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % n
}

// ordered is the values, oldest first (nil when none). Until the ring is
// full they are in order already and are shared with the ring, not
// copied: most jobs have fewer runs than the ring holds, and every saved
// view would otherwise copy them.
func (r *ring[T]) ordered() []T {
	if len(r.buf) == 0 {
		return nil
	}
	if r.next == 0 {
		r.shared.Store(true)
		return r.buf[:len(r.buf):len(r.buf)]
	}
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// load replaces the values with vs, oldest first, keeping the last n.
func (r *ring[T]) load(vs []T, n int) {
	r.buf, r.next = append([]T(nil), lastN(vs, n)...), 0
}

// lastN is the last n elements of s.
func lastN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// MaxDurationHistory bounds the durations kept per job for advice on
// timeouts and lock TTLs: the right timeout is the P99 of real durations
// with a margin, the right lock TTL a multiple of the longest run.
const MaxDurationHistory = 100

// observeDuration adds seconds to the job's duration history.
func (j *job) observeDuration(seconds float64) { j.durations.push(seconds, MaxDurationHistory) }

// DurationQuantile returns the q-quantile (0 < q <= 1) of the durations by
// nearest rank, and false when there are none.
func DurationQuantile(durations []float64, q float64) (float64, bool) {
	if len(durations) == 0 {
		return 0, false
	}
	s := slices.Clone(durations)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)], true
}
