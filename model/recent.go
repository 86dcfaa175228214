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

// remember appends r to the job's recent runs, newest last. The slice is
// never written in place: a view taken before keeps what it saw.
func (j *job) remember(r RecentRun) {
	keep := j.Recent
	if len(keep) >= MaxRecentRuns {
		keep = keep[len(keep)-MaxRecentRuns+1:]
	}
	next := make([]RecentRun, len(keep), len(keep)+1)
	copy(next, keep)
	j.Recent = append(next, r)
}

// MaxDurationHistory bounds the durations kept per job for advice on
// timeouts and lock TTLs: the right timeout is the P99 of real durations
// with a margin, the right lock TTL a multiple of the longest run.
const MaxDurationHistory = 100

// observeDuration appends seconds to the job's duration history, copying
// rather than writing in place, like remember.
func (j *job) observeDuration(seconds float64) {
	keep := j.DurationHistory
	if len(keep) >= MaxDurationHistory {
		keep = keep[len(keep)-MaxDurationHistory+1:]
	}
	next := make([]float64, len(keep), len(keep)+1)
	copy(next, keep)
	j.DurationHistory = append(next, seconds)
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
