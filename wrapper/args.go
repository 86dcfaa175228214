package wrapper

import "strings"

// ParseArgs reads the run command's arguments (the command line after
// `jobwatch run`, or all of `jobwatch-run`'s) when they are flags of
// RunFlagTable, each at most once (a Repeatable one any number of times),
// as --name=value or --name value, then `--` and a command: the form every
// crontab line and unit of docs/run.md takes, which `jobwatch run` and
// `jobwatch-run` run without building kingpin's application. ok is false
// for any other command line, including ones kingpin would accept (the
// command without `--`, a global flag, help, a file of arguments, a separate
// value that starts with - or @, which kingpin reads as a flag or a file):
// kingpin parses those, to the same Flags or to its usage error.
func ParseArgs(args []string) (f Flags, ok bool) {
	for _, fl := range RunFlagTable {
		if !fl.Repeatable() {
			fl.Set(&f, fl.Default)
		}
	}
	seen := make([]bool, len(RunFlagTable))
	for i := 0; i < len(args); i++ {
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
		k := lookupRunFlag(name)
		if k < 0 || seen[k] && !RunFlagTable[k].Repeatable() {
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
		RunFlagTable[k].Set(&f, value)
	}
	return f, false // no `--`
}

// NeedsRemote reports whether f asks for a shared lock or a job_runs table,
// which need package wrapper/remote (Flags.Remote).
func (f Flags) NeedsRemote() bool {
	return f.LockRedis != "" || f.LockRedisPasswordFile != "" || f.LockMySQL != "" || f.LockMySQLDSNFile != "" ||
		f.RecordMySQL != "" || f.RecordMySQLDSNFile != ""
}

func lookupRunFlag(name string) int {
	for i, fl := range RunFlagTable {
		if fl.Name == name {
			return i
		}
	}
	return -1
}
