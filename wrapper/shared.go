package wrapper

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Layers of a lock, as records name them.
const (
	layerFile  = "file"
	layerRedis = "redis"
	layerMySQL = "mysql"
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

// Why a shared lock was lost, the reason of a lock_lost record.
const (
	lostKeyGone     = "key_gone"        // Redis: the key expired or was deleted
	lostKeyTaken    = "key_taken"       // Redis: the key holds another token
	lostUnreachable = "unreachable"     // Redis: not renewed within the TTL
	lostConnection  = "connection_lost" // MySQL: the lock's connection failed
	lostNotOwner    = "not_owner"       // MySQL: the lock is free or another connection's
)

// sharedLock is the second layer: a lock on a server every host can reach.
type sharedLock interface {
	layer() string
	// acquire tries once, without waiting. held: the lock is ours; else
	// holder is who has it, when known. An error means the server could not
	// be asked (unavailable); errConfig wraps errors no retry can fix.
	acquire(ctx context.Context) (held bool, holder string, err error)
	// watch keeps the lock (renewing or checking it) until ctx ends, and
	// returns early, with why, when the lock is lost.
	watch(ctx context.Context) (lost lockLoss, ok bool)
	// release lets the lock go if it is still ours, and closes connections.
	release(ctx context.Context) error
	close()
}

// lockLoss says why and to whom a shared lock was lost.
type lockLoss struct {
	reason string
	holder string // the new holder, when known
}

// errConfig marks an error of the shared lock's configuration or
// permissions, which --lock-unavailable does not cover: the run fails.
var errConfig = errors.New("shared lock misconfigured")

type configError struct{ err error }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{e.err, errConfig} }
func isConfigError(err error) bool    { return errors.Is(err, errConfig) }

// lockNameRE is what a shared lock name may look like: a Redis key or a
// MySQL GET_LOCK name that needs no quoting anywhere and cannot surprise a
// shell, a log or a metric.
var lockNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_.:/-]+$`) })

// Longest lock names: MySQL's GET_LOCK limit, and a Redis key bound of our
// own (a job name is at most 128 bytes).
const (
	maxMySQLLockName = 64
	maxRedisLockName = 200
)

// sharedLockName returns --lock-name, or the default for the layer.
func sharedLockName(name, job, layer string) (string, error) {
	if name == "" {
		if layer == layerMySQL {
			name = "jobwatch." + job
		} else {
			name = "jobwatch:" + job
		}
	}
	max := maxRedisLockName
	if layer == layerMySQL {
		max = maxMySQLLockName
	}
	if len(name) > max {
		return "", fmt.Errorf("--lock-name %q is %d characters long; a %s lock name may have at most %d (set a shorter --lock-name)", name, len(name), layer, max)
	}
	if !lockNameRE().MatchString(name) {
		return "", fmt.Errorf("--lock-name %q: may only contain letters, digits and _ . : / -", name)
	}
	return name, nil
}

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
