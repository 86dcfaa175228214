package wrapper

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Flags are jobwatch run's command-line values as typed. RunFlags parses
// them, so that a malformed value is recorded as a failed run of the job like
// every other reason it could not run.
type Flags struct {
	Job, Log, Lock     string
	Timeout, KillAfter string // durations; see ParseDuration
	SkipExitCode       string
	// The shared lock and the table, as the flags of the same names.
	LockRedis, LockRedisPasswordFile             string
	LockMySQL, LockMySQLDSNFile                  string
	LockName, LockTTL                            string // LockTTL: a duration
	LockUnavailable, OnLockLost                  string
	RecordMySQL, RecordMySQLDSNFile, RecordTable string
	Command                                      []string

	// Not flags: what the table and the shared lock need (package
	// wrapper/remote; nil refuses their flags), the host recorded and the
	// MySQL lock's check interval when the defaults do not suit (tests).
	Remote            Remote
	Host              string
	LockCheckInterval time.Duration
}

// RunFlags parses f and runs the command as Run does.
func RunFlags(f Flags) int {
	o := Options{Job: f.Job, Log: f.Log, Lock: f.Lock, Command: f.Command, KillAfter: DefaultKillAfter,
		LockRedis: f.LockRedis, LockRedisPasswordFile: f.LockRedisPasswordFile,
		LockMySQL: f.LockMySQL, LockMySQLDSNFile: f.LockMySQLDSNFile,
		LockName: f.LockName, LockUnavailable: f.LockUnavailable, OnLockLost: f.OnLockLost,
		RecordMySQL: f.RecordMySQL, RecordMySQLDSNFile: f.RecordMySQLDSNFile, RecordTable: f.RecordTable,
		Remote: f.Remote, Host: f.Host, LockCheckInterval: f.LockCheckInterval}
	var errs []error
	var err error
	if f.Timeout != "" {
		if o.Timeout, err = ParseDuration(f.Timeout); err != nil {
			errs = append(errs, fmt.Errorf("--timeout: %w", err))
		}
	}
	if f.KillAfter != "" {
		if o.KillAfter, err = ParseDuration(f.KillAfter); err != nil {
			errs = append(errs, fmt.Errorf("--kill-after: %w", err))
		}
	}
	if f.LockTTL != "" {
		if o.LockTTL, err = ParseDuration(f.LockTTL); err != nil {
			errs = append(errs, fmt.Errorf("--lock-ttl: %w", err))
		}
	}
	if f.SkipExitCode != "" {
		if o.SkipExitCode, err = strconv.Atoi(f.SkipExitCode); err != nil {
			errs = append(errs, fmt.Errorf("--skip-exit-code: %q is not a number", f.SkipExitCode))
		}
	}
	r, code := newRunner(o)
	if r == nil {
		return code
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return r.fail(ExitWrapper, errors.New(strings.Join(msgs, "; ")))
	}
	return r.run()
}

// ParseDuration reads a Go duration ("90s", "1h30m") or, as timeout(1) does,
// a bare number of seconds ("90", "0.5").
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("%q is not a duration (like 90s, 30m, 1h30m, or seconds)", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}
