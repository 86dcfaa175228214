// Package remote is what jobwatch run needs a server for: the shared lock
// on Redis or MySQL, and the job_runs table of --record-mysql. Package
// wrapper takes it as Options.Remote, so that cmd/jobwatch-run, which runs
// the command lines without these options, links neither client nor the
// network stack, whose initialisation every such run would pay for.
package remote

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/redact"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/wrapper"
)

// Remote implements wrapper.Remote.
type Remote struct{}

var _ wrapper.Remote = Remote{}

// Table sets up --record-mysql; nothing is dialled yet.
func (Remote) Table(o wrapper.Options, red *redact.Redactor) (wrapper.Table, error) {
	cfg, err := mysqlDSN(o, "--record-mysql", o.RecordMySQL, o.RecordMySQLDSNFile, red)
	if err != nil {
		return nil, err
	}
	t, err := newRunTable(cfg, o.RecordTable, red)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SharedLock sets up --lock-mysql or --lock-redis; the wrapper has checked
// that exactly one is given.
func (Remote) SharedLock(o wrapper.Options, token string, red *redact.Redactor) (wrapper.SharedLock, error) {
	if o.LockMySQL != "" || o.LockMySQLDSNFile != "" {
		name, err := sharedLockName(o.LockName, o.Job, wrapper.LayerMySQL)
		if err != nil {
			return nil, err
		}
		cfg, err := mysqlDSN(o, "--lock-mysql", o.LockMySQL, o.LockMySQLDSNFile, red)
		if err != nil {
			return nil, err
		}
		l, err := newMySQLLock(cfg, name, o.LockCheckInterval, red)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	name, err := sharedLockName(o.LockName, o.Job, wrapper.LayerRedis)
	if err != nil {
		return nil, err
	}
	ttl, err := leaseTTL(o)
	if err != nil {
		return nil, err
	}
	l, err := newRedisLock(o.LockRedis, o.LockRedisPasswordFile, name, token, ttl, wrapper.StopMargin(ttl, o.KillAfter), red)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// leaseTTL is --lock-ttl, or 2 x --timeout (at least the shortest lease
// --kill-after allows). A lease must keep its margin (wrapper.StopMargin,
// --kill-after the most of it) and leave half of itself for renewals: a
// shorter one is refused, naming both flags.
func leaseTTL(o wrapper.Options) (time.Duration, error) {
	least := wrapper.MinLeaseFor(o.KillAfter).Round(100*time.Millisecond) + 100*time.Millisecond
	ttl := o.LockTTL
	switch {
	case ttl == 0 && o.Timeout > 0:
		return max(2*o.Timeout, least, minLockTTL), nil
	case ttl == 0:
		return 0, errors.New("--lock-ttl is required with --lock-redis when no --timeout is set")
	case ttl < minLockTTL:
		return 0, fmt.Errorf("--lock-ttl must be at least %s, got %s", minLockTTL, ttl)
	case ttl < least:
		return 0, fmt.Errorf("--lock-ttl %s is too short for --kill-after %s: the job is sent SIGTERM --kill-after, 1%% of the lease and 250ms before the lease can expire, and that margin may take at most half the lease: give --lock-ttl %s or more, or a shorter --kill-after",
			ttl, o.KillAfter, least)
	}
	return ttl, nil
}

// mysqlDSN reads a --record-mysql or --lock-mysql DSN (flag names the flag)
// as the exporter's config reads one, with the wrapper's shorter timeouts
// and its one redactor, and without a logger: the driver's messages
// ("unexpected EOF") would only be noise on the job's stderr.
// o is the runner's, its defaults filled (Getenv among them).
func mysqlDSN(o wrapper.Options, flag, dsn, file string, red *redact.Redactor) (*mysql.Config, error) {
	cfg, _, err := secret.LoadMySQL(secret.MySQL{DSN: dsn, File: file, DSNName: flag, FileName: flag + "-dsn-file",
		Getenv: o.Getenv, Timeout: mysqlTimeout, Redactor: red}, nil)
	return cfg, err
}

// mysqlTimeout bounds dialling and each read and write of the wrapper's
// MySQL connections, unless the DSN sets timeout, readTimeout, writeTimeout.
const mysqlTimeout = 5 * time.Second

// Why a shared lock was lost, the reason of a lock_lost record.
const (
	lostKeyGone     = "key_gone"        // Redis: the key expired or was deleted
	lostKeyTaken    = "key_taken"       // Redis: the key holds another token
	lostUnreachable = "unreachable"     // Redis: not renewed within the TTL
	lostConnection  = "connection_lost" // MySQL: the lock's connection failed
	lostNotOwner    = "not_owner"       // MySQL: the lock is free or another connection's
)

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
		if layer == wrapper.LayerMySQL {
			name = "jobwatch." + job
		} else {
			name = "jobwatch:" + job
		}
	}
	max := maxRedisLockName
	if layer == wrapper.LayerMySQL {
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
