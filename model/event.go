// Package model is jobwatch's job model: sources turn outside records into
// Events, the Tracker applies them, and the collector renders the Tracker's
// view at scrape time.
package model

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/observation"
)

// OutputExcerpt bounds an Event's Output: a source keeps the end of what a
// run printed, where the error usually is, up to this many bytes.
const OutputExcerpt = 10 << 10

// OutputTail is the end of s, at most max bytes, cut at a character
// boundary.
func OutputTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// Kind says what happened to a run.
type Kind uint8

const (
	// Start: a run began.
	Start Kind = iota + 1
	// End: a run finished, with a Result.
	End
	// Skip: a run was due but did not start (for example: the lock was held).
	Skip
	// LockLost: a run in progress lost its shared lock (jobwatch run
	// --lock-redis or --lock-mysql); its end follows.
	LockLost
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "start"
	case End:
		return "end"
	case Skip:
		return "skip"
	case LockLost:
		return "lock_lost"
	}
	return "unknown"
}

// ParseKind maps a record's event field to a Kind; ok is false for anything else.
func ParseKind(s string) (Kind, bool) {
	switch s {
	case "start":
		return Start, true
	case "end":
		return End, true
	case "skip":
		return Skip, true
	case "lock_lost":
		return LockLost, true
	}
	return 0, false
}

// Result is how a finished run ended. The values are the result label of
// jobwatch_job_runs_total.
type Result string

const (
	Success Result = "success"
	Failure Result = "failure"
	Timeout Result = "timeout"
	// Lost: the run was never seen ending (its process vanished, or it outlived
	// its job's timeout), so jobwatch closed it.
	Lost Result = "lost"
	// TooShort: the run said it succeeded, in less than its job's
	// min_duration: it did nothing (a backup done in 0.1 s). A verdict of
	// jobwatch's, like Lost; it does not count as a success.
	TooShort Result = "too_short"
	// Unknown: the run ran and ended, and nothing logged how: a cron job
	// at Debian's default log level (-L 1), whose start is all cron logs
	// (Event.EndUnlogged), closed when its process is gone; or an END line
	// of a cron that logs no failures. Neither a success nor a failure.
	Unknown Result = "unknown"
)

// Results lists every Result, in the order metrics are emitted.
var Results = []Result{Success, Failure, Timeout, Lost, TooShort, Unknown}

// ParseStatus maps a record's status field to a Result. Lost and TooShort
// are jobwatch's own verdicts, not accepted from records. Skipped is: an end with it
// says the run started and declined to run (jobwatch run --skipped-exit),
// which the model counts as a skip, not a finished run.
func ParseStatus(s string) (Result, bool) {
	switch Result(s) {
	case Success, Failure, Timeout, Skipped:
		return Result(s), true
	}
	return "", false
}

// SkipReasons are the reasons a skip may give, the values of the reason
// label of jobwatch_job_skips_total besides those a runlog source's regex
// patterns declare: a reason outside them counts as "other", so that the
// label stays bounded.
var SkipReasons = []string{"locked", "lock_unavailable", "disabled", "other"}

// SkipOther is the reason of a skip that gave none, or one not declared.
const SkipOther = "other"

// LockLayers are the layers a lock can be lost on: the lock label of
// jobwatch_job_lock_lost_total.
var LockLayers = []string{"redis", "mysql"}

// MaxLockTTL is the longest lock lease a record may name: a lease longer
// than a year is a unit mistake, not a lock.
const MaxLockTTL = 365 * 24 * time.Hour

// Event is one record of a job's life, as a source read it.
type Event struct {
	Time time.Time
	Job  string
	Kind Kind
	// The flags share Kind's word: an Event is then 232 bytes.
	//
	// HasExitCode and HasDuration (End only): ExitCode and Duration are
	// the record's.
	HasExitCode, HasDuration bool
	// EndUnlogged (Start only): the source knows that no record of this
	// run's end will come (cron at -L 1 logs only starts): when its
	// process is gone the run ends with result Unknown, not Lost.
	EndUnlogged bool
	// late: it came after its job had decided past its time (and is
	// applied as it is read).
	late bool

	Host  string
	PID   int // 0: unknown
	RunID string

	// End only.
	Result   Result
	ExitCode int
	// Duration as the record states it; when absent the model derives it
	// from the matching start.
	Duration time.Duration

	// Reason: why a run was skipped, as the record says it; why an end came
	// early (lock_lost); how a lock was lost (key_gone, ...).
	Reason string
	// SkipLabel is the reason a skip counts under in
	// jobwatch_job_skips_total: Reason when it is one of SkipReasons or a
	// value the source's config declares, else SkipOther.
	SkipLabel string
	// Lock is the lock layer of a skip (file, redis, mysql: the one that
	// refused) or of a lost lock (redis, mysql).
	Lock string
	// Holder names who holds the lock, when known (skip, lock_lost).
	Holder    string
	HolderPID int

	// LockTTL is the lease of the shared lock a run holds (jobwatch run
	// --lock-redis), from its start record; 0 when none.
	LockTTL time.Duration

	// Output is the end of what the run printed, when the source has it
	// (a check-in's body, a job_runs row's output column): at most
	// OutputExcerpt bytes.
	Output string
	// OutputRef names an output the source keeps itself (a check-in's, in
	// its spool), for a reader of the source to fetch (OutputReader): it is
	// saved in its place, so an output is written once, where it arrived.
	OutputRef string
}

// Batch is what a source hands the tracker at once: events in the order they
// were read, how many records could not be read, and where the source would
// resume after them. The tracker applies a batch and stores its position under
// one lock, so a saved state never holds events without their position or the
// other way round: after a crash nothing is counted twice and nothing is lost.
type Batch struct {
	Source      string
	Events      []Event
	ParseErrors int
	// PositionResets counts times the source's saved position no longer
	// existed (a vacuumed journal cursor, a log file replaced while jobwatch
	// was stopped) and reading went on from the nearest available point.
	PositionResets int
	// Position is opaque to the model; nil leaves the stored one unchanged.
	Position json.RawMessage
	// Observations, of the kinds the source observes besides runs (a lock
	// probe's lock states), replace the source's latest ones when not nil.
	Observations []observation.Observation
	// AtEnd: the source has handed over everything there was to read when
	// it made this batch (a run log read to its end, a poll that found no
	// more rows). Until its next batch, a record it hands over is dated at
	// most its late window (SourceSpec.LateWindow) before the moment it is
	// handed over, so its watermark follows the clock. A batch without
	// AtEnd says the source is still reading (catching up): its watermark
	// is the latest record time it has handed over, less the window.
	AtEnd bool
	// Watermark, when not zero in a batch AtEnd, is what the source knows
	// of what it can still hand over from outside itself (a database's
	// oldest open transaction, sources/mysql): it hands over no record
	// dated before it until its next batch. Its watermark is then this,
	// never past the clock, instead of the clock less its late window.
	Watermark time.Time
}
