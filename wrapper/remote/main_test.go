package remote

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/internal/testsupport/wraptest"
	"github.com/jobwatch/jobwatch/wrapper"
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
	if len(os.Args) == 3 && os.Args[1] == criticalArg {
		os.Exit(criticalSection(os.Args[2])) // the job of TestPartitions, before testEnv: it inherits it
	}
	if os.Getenv(testEnv) == "1" {
		os.Exit(runFromArgs(os.Args[1:]))
	}
	// Each test has its own redis-server or MariaDB, and most wait on
	// leases, check intervals and sleeping jobs rather than on the CPU.
	testproc.DefaultParallel(parallel)
	os.Exit(m.Run())
}

// parallel is how many tests run at once when -parallel is not given. The
// tests that bound how soon something happens (a hung server noticed, a
// killed wrapper's key expired, a deleted key noticed) do not call
// t.Parallel, and so run alone, first.
const parallel = 4

// runFromArgs parses jobwatch run's flags as the kingpin command does.
func runFromArgs(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := wrapper.Flags{Remote: Remote{}}
	for _, fl := range wrapper.RunFlagTable {
		fs.Func(fl.Name, "", func(v string) error { fl.Set(&f, v); return nil })
	}
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
)
