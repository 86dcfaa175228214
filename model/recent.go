package model

import (
	"math"
	"slices"
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

// remember appends r to the job's recent runs, newest last.
func (j *job) remember(r RecentRun) {
	j.Recent = appendBounded(j.Recent, r, MaxRecentRuns)
}

// RecentRuns are the job's latest finished and skipped runs, oldest first,
// at most MaxRecentRuns.
func (j *JobState) RecentRuns() []RecentRun { return lastN(j.Recent, MaxRecentRuns) }

// LastDurations are the durations of the job's latest finished runs in
// seconds, oldest first, at most MaxDurationHistory.
func (j *JobState) LastDurations() []float64 { return lastN(j.DurationHistory, MaxDurationHistory) }

// appendBounded appends v to s, of which lastN(s, n) is what counts. It
// never writes an element within s's length, which a view taken earlier
// may be reading: it appends past the end (no earlier slice sees that far)
// or, once s holds half as many again as n, first copies its last n-1
// elements into a new array. Either way a call costs O(1), amortised (two
// element copies): applying a run must not copy the job's whole history.
func appendBounded[T any](s []T, v T, n int) []T {
	if len(s) >= n+n/2 {
		fresh := make([]T, n-1, n+n/2)
		copy(fresh, s[len(s)-n+1:])
		s = fresh
	}
	return append(s, v)
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

// observeDuration appends seconds to the job's duration history.
func (j *job) observeDuration(seconds float64) {
	j.DurationHistory = appendBounded(j.DurationHistory, seconds, MaxDurationHistory)
}

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
