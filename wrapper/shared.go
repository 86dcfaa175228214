package wrapper

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/internal/redact"
)

// Layers of a lock, as records name them.
const (
	layerFile  = "file"
	LayerRedis = "redis"
	LayerMySQL = "mysql"
)

// What to do when the shared lock's server cannot be reached
// (--lock-unavailable) and when the shared lock is lost while the job runs
// (--on-lock-lost).
const (
	UnavailableSkip = "skip"
	UnavailableRun  = "run"
	UnavailableFail = "fail"
	LostKill        = "kill"
	LostWarn        = "warn"
)

// Reasons of skip and end records.
const (
	reasonLocked      = "locked"
	reasonUnavailable = "lock_unavailable"
	reasonLockLost    = "lock_lost"
)

// SharedLock is the second layer: a lock on a server every host can reach.
type SharedLock interface {
	Layer() string // LayerRedis, LayerMySQL
	// Acquire tries once, without waiting. held: the lock is ours; else
	// holder is who has it, when known. An error means the server could not
	// be asked (unavailable); ConfigError wraps errors no retry can fix.
	Acquire(ctx context.Context) (held bool, holder string, err error)
	// Watch keeps the lock (renewing or checking it) until ctx ends, and
	// returns early, with why, when the lock is lost or can no longer be
	// proved held. A lease that expires by time calls renewed after each
	// renewal with the time by which the job must have been sent SIGTERM
	// (its stop deadline: the lease's end less the margin); the wrapper
	// hands it to the job's reaper.
	Watch(ctx context.Context, renewed func(stopAt time.Time)) (lost LockLoss, ok bool)
	// Release lets the lock go if it is still ours. It also tells whether
	// the lock was provably held until ended, when the job ended: lost,
	// with why, when it was not (the lease expired or was taken before,
	// or the server cannot say and the last proof is older than ended).
	Release(ctx context.Context, ended time.Time) (loss LockLoss, lost bool, err error)
	Close()
	// LeaseTTL is the lease a start record names; 0 for none.
	LeaseTTL() time.Duration
	// StopAt is the stop deadline of the lease as acquired, before any
	// renewal; zero for a lock that does not expire by time. The job's
	// reaper holds it from the job's start: a wrapper paused or starved
	// before Watch's first renewal still has its job stopped in time.
	StopAt() time.Time
	// Held are copies of the connections whose closing releases the lock
	// (MySQL's, whose server frees GET_LOCK as it sees it close), for the
	// job's reaper to keep open: a wrapper killed with -9 then leaves the
	// lock held until the reaper has killed the job and died with it. The
	// caller closes them. None for a lease that lasts by time.
	Held() []*os.File
	// FencingToken is this acquisition's fencing token, a number that
	// grows with every acquisition of the lock: the job's
	// JOBWATCH_FENCING_TOKEN. "" and why when there is none.
	FencingToken() (string, error)
}

// FencingTokenEnv is the environment variable that hands the job its
// shared lock's fencing token.
const FencingTokenEnv = "JOBWATCH_FENCING_TOKEN"

// LostUnreachable is the reason of a lease not renewed by its stop
// deadline: the job was stopped (by the wrapper, or by its reaper when the
// wrapper itself was paused or starved) before the lease could expire.
const LostUnreachable = "unreachable"

// StopMargin is what a lease keeps between the job's SIGTERM and the
// lease's end on the server: --kill-after (the job's grace before SIGKILL),
// the clock-rate difference between this host and the server (up to
// ClockDrift of the lease), and StopSlack for the kernel to deliver
// SIGKILL and the reaper to be scheduled.
func StopMargin(ttl, killAfter time.Duration) time.Duration {
	return killAfter + time.Duration(float64(ttl)*ClockDrift) + StopSlack
}

// ClockDrift and StopSlack: see StopMargin. 1% is twenty times the 500 ppm
// NTP lets a clock's rate err by; 250 ms covers a loaded 2-core host's
// scheduling delays seen in the partition tests.
const (
	ClockDrift = 0.01
	StopSlack  = 250 * time.Millisecond
)

// MinLeaseFor is the shortest lease whose margin (StopMargin) leaves half
// of it for renewals: 2 x (kill-after + 250 ms) / 0.98.
func MinLeaseFor(killAfter time.Duration) time.Duration {
	return time.Duration(float64(2*(killAfter+StopSlack)) / (1 - 2*ClockDrift))
}

// LockLoss says why and to whom a shared lock was lost: the reason and the
// holder of a lock_lost record.
type LockLoss struct {
	Reason string
	Holder string // the new holder, when known
}

// Table is the job_runs table of --record-mysql. Its errors say what the
// table missed; the run goes on.
type Table interface {
	Start(job, host string, pid int, at time.Time) error
	End(job, host string, pid int, started, finished time.Time, status string, code int) error
	// Finished writes a run that ends as it starts: a skip, or a failure to
	// start (what: "skip" or "end").
	Finished(what, job, host string, pid int, at time.Time, status string, code int) error
	Close()
}

// Remote opens what needs a server: the job_runs table and the shared lock.
// Package wrapper/remote implements it; without it (Options.Remote nil)
// those flags are refused. Kept apart so that cmd/jobwatch-run links no
// database or Redis client and no network stack.
type Remote interface {
	// Table sets up --record-mysql; nothing is dialled yet.
	Table(o Options, red *redact.Redactor) (Table, error)
	// SharedLock sets up --lock-redis or --lock-mysql, whose combination
	// with the other flags is already checked; token names this run.
	SharedLock(o Options, token string, red *redact.Redactor) (SharedLock, error)
}

// errConfig marks an error of the shared lock's configuration or
// permissions, which --lock-unavailable does not cover: the run fails.
var errConfig = errors.New("shared lock misconfigured")

type configError struct{ err error }

// ConfigError marks err as one of the shared lock's configuration or
// permissions.
func ConfigError(err error) error { return configError{err} }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{e.err, errConfig} }
func isConfigError(err error) bool    { return errors.Is(err, errConfig) }

// maxHolder bounds a holder in a record: a Redis value is anyone's input.
const maxHolder = 255

// cleanHolder makes a holder safe for a record the runlog source accepts:
// valid UTF-8, no control characters (each becomes '?'), at most maxHolder
// bytes, cut at a character boundary.
func cleanHolder(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) > maxHolder {
		cut := maxHolder
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
