// Package runfirst runs `jobwatch run` before the exporter's packages are
// initialised. Go initialises every linked package before main, and the
// exporter's (client_golang's default registry, procfs, protobuf, net/http,
// exporter-toolkit's dependencies) cost a run under cron more than the run
// itself. Since Go 1.21 the language fixes the order: packages sorted by
// import path, each as soon as its own imports are done. This package
// imports only the wrapper, which links no network client (the shared lock
// and the table are package wrapper/remote's), so its init comes early, and
// runs a plain command line from there: `run`, flags of the run command,
// `--`, the command. Anything else (help, a global flag, a usage error, the
// command without `--`) is left to main and kingpin, which parse the same
// flags from Flags; an option that needs a server, to package runremote.
// TestRunSkipsExporterInit checks the order on the built binary.
package runfirst

import (
	"os"
	"strings"

	"jobwatch/wrapper"
)

func init() {
	if f, ok := Parse(os.Args[1:]); ok {
		Exit(f)
	}
}

// Exit runs f and exits with the wrapper's code. The run goes in its own
// goroutine: the runtime locks the one running init to the main thread, so
// each of the run's waits (signal set-up, the job) would hand the processor
// to another thread and back; about 1 ms a run on a 2-core machine.
func Exit(f wrapper.Flags) {
	code := make(chan int)
	go func() { code <- wrapper.RunFlags(f) }()
	os.Exit(<-code)
}

// Help is the run command's help.
const Help = "Run a command under non-blocking locks (local, then shared across hosts) and a timeout, recording each run in a run log."

// CommandHelp is the help of the command argument.
const CommandHelp = "The command and its arguments, after --."

// Flag is one flag of the run command.
type Flag struct {
	Name, Help, Default, PlaceHolder string
	set                              func(*wrapper.Flags, string)
}

// Set stores v, the flag's value, in f.
func (fl Flag) Set(f *wrapper.Flags, v string) { fl.set(f, v) }

// Flags are the run command's flags, in the order of its help. Durations
// and the skip code are parsed by the wrapper, so that a malformed value in
// a crontab line is recorded as a failed run instead of only a usage error
// nobody reads.
var Flags = []Flag{
	{"job", "Job name, as in jobwatch.yml (required).", "", "NAME",
		func(f *wrapper.Flags, v string) { f.Job = v }},
	{"log", "Run log to append records to (default " + wrapper.DefaultLog + "); - for none (with --record-mysql).", wrapper.DefaultLog, "PATH",
		func(f *wrapper.Flags, v string) { f.Log = v }},
	{"lock", "Lock file: skip the run if another run holds it (created if missing, never deleted).", "", "PATH",
		func(f *wrapper.Flags, v string) { f.Lock = v }},
	{"timeout", "Kill the command's process group after this long (e.g. 30m, 90s, or seconds); 0: no timeout.", "0", "DURATION",
		func(f *wrapper.Flags, v string) { f.Timeout = v }},
	{"kill-after", "After the timeout's SIGTERM, SIGKILL the process group this much later.", wrapper.DefaultKillAfter.String(), "DURATION",
		func(f *wrapper.Flags, v string) { f.KillAfter = v }},
	{"skip-exit-code", "Exit code when the run is skipped (a lock is held, or the shared lock's server cannot be reached).", "0", "N",
		func(f *wrapper.Flags, v string) { f.SkipExitCode = v }},
	{"lock-redis", "Shared lock on a Redis server, taken after --lock: redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path.", "", "URL",
		func(f *wrapper.Flags, v string) { f.LockRedis = v }},
	{"lock-redis-password-file", "File holding the Redis password (instead of the URL's).", "", "PATH",
		func(f *wrapper.Flags, v string) { f.LockRedisPasswordFile = v }},
	{"lock-mysql", "Shared lock with MySQL GET_LOCK, taken after --lock: a go-sql-driver DSN; ${VAR} is replaced by the environment variable.", "", "DSN",
		func(f *wrapper.Flags, v string) { f.LockMySQL = v }},
	{"lock-mysql-dsn-file", "File holding the --lock-mysql DSN.", "", "PATH",
		func(f *wrapper.Flags, v string) { f.LockMySQLDSNFile = v }},
	{"lock-name", `Shared lock name (default "jobwatch:<job>" for Redis, "jobwatch.<job>" for MySQL, at most 64 characters).`, "", "NAME",
		func(f *wrapper.Flags, v string) { f.LockName = v }},
	{"lock-ttl", "Redis lease length, renewed every third of it (default 2 x --timeout; required with --lock-redis without --timeout).", "", "DURATION",
		func(f *wrapper.Flags, v string) { f.LockTTL = v }},
	{"lock-unavailable", "When the shared lock's server cannot be reached: skip, run (without it) or fail.", wrapper.UnavailableSkip, "skip|run|fail",
		func(f *wrapper.Flags, v string) { f.LockUnavailable = v }},
	{"on-lock-lost", "When the shared lock is lost while the job runs: kill (the job's process group) or warn.", wrapper.LostKill, "kill|warn",
		func(f *wrapper.Flags, v string) { f.OnLockLost = v }},
	{"record-mysql", "Also write the run into a job_runs table (a go-sql-driver DSN; ${VAR} expanded). With --log -, the table only.", "", "DSN",
		func(f *wrapper.Flags, v string) { f.RecordMySQL = v }},
	{"record-mysql-dsn-file", "File holding the --record-mysql DSN.", "", "PATH",
		func(f *wrapper.Flags, v string) { f.RecordMySQLDSNFile = v }},
	{"record-table", "Table for --record-mysql (may be database.table).", wrapper.DefaultRecordTable, "NAME",
		func(f *wrapper.Flags, v string) { f.RecordTable = v }},
}

// Parse reads args (the command line without the program name) when it is
// `run`, flags of Flags each at most once as --name=value or --name value,
// `--` and a command. ok is false for any other command line, including
// ones kingpin would accept (the command without `--`, a global flag):
// main parses those. A separate value that starts with - or @ (which
// kingpin reads as a flag or a file of arguments) is left to it too, and so
// are the options of the shared lock and the table, which need package
// wrapper/remote.
func Parse(args []string) (f wrapper.Flags, ok bool) {
	f, ok = parse(args)
	return f, ok && !NeedsRemote(f)
}

// parse is Parse without the check for the remote options.
func parse(args []string) (f wrapper.Flags, ok bool) {
	if len(args) == 0 || args[0] != "run" {
		return f, false
	}
	for _, fl := range Flags {
		fl.set(&f, fl.Default)
	}
	seen := make([]bool, len(Flags))
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 == len(args) {
				return f, false // no command: kingpin's and the wrapper's message
			}
			f.Command = args[i+1:]
			return f, true
		}
		name, value, inline := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || strings.HasPrefix(value, "@") {
			return f, false
		}
		k := lookup(name)
		if k < 0 || seen[k] {
			return f, false
		}
		if !inline {
			if i+1 == len(args) {
				return f, false
			}
			i++
			value = args[i]
			if value == "" || value[0] == '-' || value[0] == '@' {
				return f, false
			}
		}
		seen[k] = true
		Flags[k].set(&f, value)
	}
	return f, false // no `--`
}

// ParseRemote is Parse for the command lines it leaves out only because
// they need package wrapper/remote (see package runremote).
func ParseRemote(args []string) (f wrapper.Flags, ok bool) {
	f, ok = parse(args)
	return f, ok && NeedsRemote(f)
}

// NeedsRemote reports whether f needs package wrapper/remote, which this
// package does not link.
func NeedsRemote(f wrapper.Flags) bool {
	return f.LockRedis != "" || f.LockRedisPasswordFile != "" || f.LockMySQL != "" || f.LockMySQLDSNFile != "" ||
		f.RecordMySQL != "" || f.RecordMySQLDSNFile != ""
}

func lookup(name string) int {
	for i, fl := range Flags {
		if fl.Name == name {
			return i
		}
	}
	return -1
}
