package model

import "time"

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
	SkipReason  string
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
