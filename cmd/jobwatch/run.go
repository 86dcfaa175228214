package main

import (
	"github.com/alecthomas/kingpin/v2"

	"jobwatch/wrapper"
)

// addRunCommand adds `jobwatch run`; the returned function runs it and
// returns the exit code. Durations and the skip code are parsed by the
// wrapper, so that a malformed value in a crontab line is recorded as a
// failed run instead of only a usage error nobody reads.
func addRunCommand(app *kingpin.Application) (*kingpin.CmdClause, func() int) {
	cmd := app.Command("run", "Run a command under non-blocking locks (local, then shared across hosts) and a timeout, recording each run in a run log.")
	job := cmd.Flag("job", "Job name, as in jobwatch.yml (required).").PlaceHolder("NAME").String()
	log := cmd.Flag("log", "Run log to append records to (default "+wrapper.DefaultLog+"); - for none (with --record-mysql).").Default(wrapper.DefaultLog).PlaceHolder("PATH").String()
	lock := cmd.Flag("lock", "Lock file: skip the run if another run holds it (created if missing, never deleted).").PlaceHolder("PATH").String()
	timeout := cmd.Flag("timeout", "Kill the command's process group after this long (e.g. 30m, 90s, or seconds); 0: no timeout.").Default("0").PlaceHolder("DURATION").String()
	killAfter := cmd.Flag("kill-after", "After the timeout's SIGTERM, SIGKILL the process group this much later.").Default(wrapper.DefaultKillAfter.String()).PlaceHolder("DURATION").String()
	skipCode := cmd.Flag("skip-exit-code", "Exit code when the run is skipped (a lock is held, or the shared lock's server cannot be reached).").Default("0").PlaceHolder("N").String()
	lockRedis := cmd.Flag("lock-redis", "Shared lock on a Redis server, taken after --lock: redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path.").PlaceHolder("URL").String()
	lockRedisPw := cmd.Flag("lock-redis-password-file", "File holding the Redis password (instead of the URL's).").PlaceHolder("PATH").String()
	lockMySQL := cmd.Flag("lock-mysql", "Shared lock with MySQL GET_LOCK, taken after --lock: a go-sql-driver DSN; ${VAR} is replaced by the environment variable.").PlaceHolder("DSN").String()
	lockMySQLFile := cmd.Flag("lock-mysql-dsn-file", "File holding the --lock-mysql DSN.").PlaceHolder("PATH").String()
	lockName := cmd.Flag("lock-name", `Shared lock name (default "jobwatch:<job>" for Redis, "jobwatch.<job>" for MySQL, at most 64 characters).`).PlaceHolder("NAME").String()
	lockTTL := cmd.Flag("lock-ttl", "Redis lease length, renewed every third of it (default 2 x --timeout; required with --lock-redis without --timeout).").PlaceHolder("DURATION").String()
	lockUnavailable := cmd.Flag("lock-unavailable", "When the shared lock's server cannot be reached: skip, run (without it) or fail.").Default(wrapper.UnavailableSkip).PlaceHolder("skip|run|fail").String()
	onLockLost := cmd.Flag("on-lock-lost", "When the shared lock is lost while the job runs: kill (the job's process group) or warn.").Default(wrapper.LostKill).PlaceHolder("kill|warn").String()
	recordMySQL := cmd.Flag("record-mysql", "Also write the run into a job_runs table (a go-sql-driver DSN; ${VAR} expanded). With --log -, the table only.").PlaceHolder("DSN").String()
	recordMySQLFile := cmd.Flag("record-mysql-dsn-file", "File holding the --record-mysql DSN.").PlaceHolder("PATH").String()
	recordTable := cmd.Flag("record-table", "Table for --record-mysql (may be database.table).").Default(wrapper.DefaultRecordTable).PlaceHolder("NAME").String()
	command := cmd.Arg("command", "The command and its arguments, after --.").Strings()
	return cmd, func() int {
		return wrapper.RunFlags(wrapper.Flags{
			Job: *job, Log: *log, Lock: *lock,
			Timeout: *timeout, KillAfter: *killAfter, SkipExitCode: *skipCode,
			LockRedis: *lockRedis, LockRedisPasswordFile: *lockRedisPw,
			LockMySQL: *lockMySQL, LockMySQLDSNFile: *lockMySQLFile,
			LockName: *lockName, LockTTL: *lockTTL,
			LockUnavailable: *lockUnavailable, OnLockLost: *onLockLost,
			RecordMySQL: *recordMySQL, RecordMySQLDSNFile: *recordMySQLFile, RecordTable: *recordTable,
			Command: *command,
		})
	}
}
