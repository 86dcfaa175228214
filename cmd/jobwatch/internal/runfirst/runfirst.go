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
// flags from wrapper.RunFlagTable; an option that needs a server, to package runremote.
// TestRunSkipsExporterInit checks the order on the built binary.
package runfirst

import (
	"os"
	"strings"

	"github.com/jobwatch/jobwatch/wrapper"
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

// Parse reads args (the command line without the program name) when it is
// `run`, flags of wrapper.RunFlagTable each at most once (a Repeatable one
// any number of times) as --name=value or --name value,
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
	for _, fl := range wrapper.RunFlagTable {
		if !fl.Repeatable() {
			fl.Set(&f, fl.Default)
		}
	}
	seen := make([]bool, len(wrapper.RunFlagTable))
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
		if k < 0 || seen[k] && !wrapper.RunFlagTable[k].Repeatable() {
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
		wrapper.RunFlagTable[k].Set(&f, value)
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
	for i, fl := range wrapper.RunFlagTable {
		if fl.Name == name {
			return i
		}
	}
	return -1
}
