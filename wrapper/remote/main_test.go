package remote

import (
	"flag"
	"os"
	"testing"
	"time"

	"jobwatch/wrapper"
	"jobwatch/wrapper/internal/wraptest"
)

// The tests run the wrapper as a real process, as package wrapper's do
// (package wraptest): this test binary, started with testEnv set, parses
// jobwatch run's flags and calls wrapper.RunFlags with Remote{}, and the
// wrapper re-executes the binary for the job.
const testEnv = wraptest.Env

// testHostEnv sets the host the wrapper records (two wrappers as two
// hosts); testCheckEnv the MySQL lock's check interval.
const (
	testHostEnv  = wraptest.HostEnv
	testCheckEnv = wraptest.CheckEnv
)

func TestMain(m *testing.M) {
	if os.Getenv(testEnv) == "1" {
		os.Exit(runFromArgs(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runFromArgs parses jobwatch run's flags as the kingpin command does.
func runFromArgs(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := wrapper.Flags{Remote: Remote{}}
	fs.StringVar(&f.Job, "job", "", "")
	fs.StringVar(&f.Log, "log", "", "")
	fs.StringVar(&f.Lock, "lock", "", "")
	fs.StringVar(&f.Timeout, "timeout", "", "")
	fs.StringVar(&f.KillAfter, "kill-after", "", "")
	fs.StringVar(&f.SkipExitCode, "skip-exit-code", "", "")
	fs.StringVar(&f.LockRedis, "lock-redis", "", "")
	fs.StringVar(&f.LockRedisPasswordFile, "lock-redis-password-file", "", "")
	fs.StringVar(&f.LockMySQL, "lock-mysql", "", "")
	fs.StringVar(&f.LockMySQLDSNFile, "lock-mysql-dsn-file", "", "")
	fs.StringVar(&f.LockName, "lock-name", "", "")
	fs.StringVar(&f.LockTTL, "lock-ttl", "", "")
	fs.StringVar(&f.LockUnavailable, "lock-unavailable", "", "")
	fs.StringVar(&f.OnLockLost, "on-lock-lost", "", "")
	fs.StringVar(&f.RecordMySQL, "record-mysql", "", "")
	fs.StringVar(&f.RecordMySQLDSNFile, "record-mysql-dsn-file", "", "")
	fs.StringVar(&f.RecordTable, "record-table", "", "")
	f.Host = os.Getenv(testHostEnv)
	if d := os.Getenv(testCheckEnv); d != "" {
		f.LockCheckInterval, _ = time.ParseDuration(d)
	}
	if err := fs.Parse(args); err != nil {
		return wrapper.ExitWrapper
	}
	f.Command = fs.Args()
	return wrapper.RunFlags(f)
}

// The helpers, shared with package wrapper/remote's tests.
type record = wraptest.Record

var groupAlive = wraptest.GroupAlive

var (
	wrapCmd     = wraptest.Cmd
	wrap        = wraptest.Wrap
	readRecords = wraptest.ReadRecords
	events      = wraptest.Events
	waitFor     = wraptest.WaitFor
	writeScript = wraptest.WriteScript
	intp        = wraptest.Intp
	fmtInt      = wraptest.FmtInt
)
