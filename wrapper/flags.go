package wrapper

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/internal/runcmd"
)

// Flags are jobwatch run's command-line values as typed. RunFlags parses
// them, so that a malformed value is recorded as a failed run of the job like
// every other reason it could not run.
type Flags struct {
	Job, Log, Lock     string
	Timeout, KillAfter string // durations; see runcmd.ParseDuration
	SkipExitCode       string
	// The shared lock and the table, as the flags of the same names.
	LockRedis, LockRedisPasswordFile             string
	LockMySQL, LockMySQLDSNFile                  string
	LockName, LockTTL                            string // LockTTL: a duration
	LockUnavailable, OnLockLost                  string
	RecordMySQL, RecordMySQLDSNFile, RecordTable string
	// A run that declined to run: --skipped-exit (repeatable),
	// --skipped-output, --skipped-reason.
	SkippedExit                  []string
	SkippedOutput, SkippedReason string
	Command                      []string

	// Not flags: what the table and the shared lock need (package
	// wrapper/remote; nil refuses their flags), the host recorded and the
	// MySQL lock's check interval when the defaults do not suit (tests).
	Remote            Remote
	Host              string
	LockCheckInterval time.Duration
}

// RunHelp is the run command's help.
const RunHelp = "Run a command under non-blocking locks (local, then shared across hosts) and a timeout, recording each run in a run log."

// RunCommandHelp is the help of the run command's command argument.
const RunCommandHelp = "The command and its arguments, after --."

// RunFlag is one flag of the run command.
type RunFlag struct {
	Name, Help, Default, PlaceHolder string
	set                              func(*Flags, string)
}

// Set stores v, the flag's value, in f.
func (fl RunFlag) Set(f *Flags, v string) { fl.set(f, v) }

// Repeatable reports whether the flag may be given more than once, each
// value kept (Set adds it); every other flag is given at most once.
func (fl RunFlag) Repeatable() bool { return fl.Name == flagSkippedExit }

const flagSkippedExit = "skipped-exit"

// RunFlagTable are the run command's flags, in the order of its help: the
// one table kingpin's run command, ParseArgs (jobwatch run's usual command
// line, and jobwatch-run's) and the tests' helper processes read. Durations
// and the skip code are parsed by the wrapper, so that a malformed value in
// a crontab line is recorded as a failed run instead of only a usage error
// nobody reads.
var RunFlagTable = []RunFlag{
	{"job", "Job name, as in jobwatch.yml (required).", "", "NAME",
		func(f *Flags, v string) { f.Job = v }},
	{"log", "Run log to append records to (default " + DefaultLog + "); - for none (with --record-mysql).", DefaultLog, "PATH",
		func(f *Flags, v string) { f.Log = v }},
	{"lock", "Lock file: skip the run if another run holds it (created if missing, never deleted).", "", "PATH",
		func(f *Flags, v string) { f.Lock = v }},
	{"timeout", "Kill the command's process group after this long (e.g. 30m, 90s, or seconds); 0: no timeout.", "0", "DURATION",
		func(f *Flags, v string) { f.Timeout = v }},
	{"kill-after", "After the timeout's SIGTERM, SIGKILL the process group this much later.", DefaultKillAfter.String(), "DURATION",
		func(f *Flags, v string) { f.KillAfter = v }},
	{"skip-exit-code", "Exit code when the run is skipped (a lock is held, or the shared lock's server cannot be reached).", "0", "N",
		func(f *Flags, v string) { f.SkipExitCode = v }},
	{flagSkippedExit, "The command exiting N declined to run (75, EX_TEMPFAIL, by convention): recorded as a skip, exit --skip-exit-code. Repeatable.", "", "N",
		func(f *Flags, v string) { f.SkippedExit = append(f.SkippedExit, v) }},
	{"skipped-output", "A line of the command's output (stdout or stderr) matching this regular expression makes the run a skip, whatever it exits with.", "", "REGEX",
		func(f *Flags, v string) { f.SkippedOutput = v }},
	{"skipped-reason", "The reason a run skipped by --skipped-exit or --skipped-output is recorded with: locked, lock_unavailable, disabled or other (the default).", "", "REASON",
		func(f *Flags, v string) { f.SkippedReason = v }},
	{"lock-redis", "Shared lock on a Redis server, taken after --lock: redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path.", "", "URL",
		func(f *Flags, v string) { f.LockRedis = v }},
	{"lock-redis-password-file", "File holding the Redis password (instead of the URL's).", "", "PATH",
		func(f *Flags, v string) { f.LockRedisPasswordFile = v }},
	{"lock-mysql", "Shared lock with MySQL GET_LOCK, taken after --lock: a go-sql-driver DSN; ${VAR} is replaced by the environment variable.", "", "DSN",
		func(f *Flags, v string) { f.LockMySQL = v }},
	{"lock-mysql-dsn-file", "File holding the --lock-mysql DSN.", "", "PATH",
		func(f *Flags, v string) { f.LockMySQLDSNFile = v }},
	{"lock-name", `Shared lock name (default "jobwatch:<job>" for Redis, "jobwatch.<job>" for MySQL, at most 64 characters).`, "", "NAME",
		func(f *Flags, v string) { f.LockName = v }},
	{"lock-ttl", "Redis lease length, renewed every third of it; the job is stopped before it can expire, --kill-after and 1% + 250ms ahead (default 2 x --timeout; required with --lock-redis without --timeout).", "", "DURATION",
		func(f *Flags, v string) { f.LockTTL = v }},
	{"lock-unavailable", "When the shared lock's server cannot be reached: skip, run (without it) or fail.", UnavailableSkip, "skip|run|fail",
		func(f *Flags, v string) { f.LockUnavailable = v }},
	{"on-lock-lost", "When the shared lock is lost while the job runs: kill (the job's process group) or warn.", LostKill, "kill|warn",
		func(f *Flags, v string) { f.OnLockLost = v }},
	{"record-mysql", "Also write the run into a job_runs table (a go-sql-driver DSN; ${VAR} expanded). With --log -, the table only.", "", "DSN",
		func(f *Flags, v string) { f.RecordMySQL = v }},
	{"record-mysql-dsn-file", "File holding the --record-mysql DSN.", "", "PATH",
		func(f *Flags, v string) { f.RecordMySQLDSNFile = v }},
	{"record-table", "Table for --record-mysql (may be database.table).", DefaultRecordTable, "NAME",
		func(f *Flags, v string) { f.RecordTable = v }},
}

// RunFlags parses f and runs the command as Run does.
func RunFlags(f Flags) int {
	o := Options{Job: f.Job, Log: f.Log, Lock: f.Lock, Command: f.Command, KillAfter: DefaultKillAfter,
		LockRedis: f.LockRedis, LockRedisPasswordFile: f.LockRedisPasswordFile,
		LockMySQL: f.LockMySQL, LockMySQLDSNFile: f.LockMySQLDSNFile,
		LockName: f.LockName, LockUnavailable: f.LockUnavailable, OnLockLost: f.OnLockLost,
		RecordMySQL: f.RecordMySQL, RecordMySQLDSNFile: f.RecordMySQLDSNFile, RecordTable: f.RecordTable,
		SkippedOutput: f.SkippedOutput, SkippedReason: f.SkippedReason,
		Remote: f.Remote, Host: f.Host, LockCheckInterval: f.LockCheckInterval}
	var errs []error
	var err error
	for _, v := range f.SkippedExit {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--skipped-exit: %q is not a number", v))
			continue
		}
		o.SkippedExit = append(o.SkippedExit, n)
	}
	if f.Timeout != "" {
		if o.Timeout, err = runcmd.ParseDuration(f.Timeout); err != nil {
			errs = append(errs, fmt.Errorf("--timeout: %w", err))
		}
	}
	if f.KillAfter != "" {
		if o.KillAfter, err = runcmd.ParseDuration(f.KillAfter); err != nil {
			errs = append(errs, fmt.Errorf("--kill-after: %w", err))
		}
	}
	if f.LockTTL != "" {
		if o.LockTTL, err = runcmd.ParseDuration(f.LockTTL); err != nil {
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
