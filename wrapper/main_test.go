package wrapper

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/wraptest"
)

// The tests run the wrapper as a real process: this test binary, started with
// testEnv set, parses jobwatch run's flags and calls Run (as
// cmd/jobwatch/run.go does), and Run re-executes the binary for the job.
const testEnv = wraptest.Env

// testAfterLockEnv names a file the wrapper creates once it holds the local
// lock; it then starts its job only once its standard input has a byte or
// is closed, as a wrapper starved of CPU would be late to: the test says
// when.
const testAfterLockEnv = "JOBWATCH_WRAPPER_TEST_AFTER_LOCK"

// testUnrenewedEnv, set to 1, gives the wrapper unrenewedRemote for its
// --lock-redis: a lease acquired at once and never renewed.
const testUnrenewedEnv = "JOBWATCH_WRAPPER_TEST_UNRENEWED"

// testHostEnv sets the host the wrapper records (two wrappers as two
// hosts); testCheckEnv the MySQL lock's check interval.
const (
	testHostEnv  = wraptest.HostEnv
	testCheckEnv = wraptest.CheckEnv
)

func TestMain(m *testing.M) {
	if os.Getenv(testEnv) == "1" {
		if marker := os.Getenv(testAfterLockEnv); marker != "" {
			afterLockHook = func() {
				os.WriteFile(marker, nil, 0o600)
				os.Stdin.Read(make([]byte, 1))
			}
		}
		os.Exit(runFromArgs(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runFromArgs parses jobwatch run's flags as the kingpin command does.
func runFromArgs(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f Flags
	for _, fl := range RunFlagTable {
		fs.Func(fl.Name, "", func(v string) error { fl.Set(&f, v); return nil })
	}
	f.Host = os.Getenv(testHostEnv)
	if d := os.Getenv(testCheckEnv); d != "" {
		f.LockCheckInterval, _ = time.ParseDuration(d)
	}
	if os.Getenv(testUnrenewedEnv) == "1" {
		f.Remote = unrenewedRemote{}
	}
	if err := fs.Parse(args); err != nil {
		return ExitWrapper
	}
	f.Command = fs.Args()
	return RunFlags(f)
}

// The helpers, shared with package wrapper/remote's tests.
type record = wraptest.Record

var (
	wrapCmd     = wraptest.Cmd
	wrap        = wraptest.Wrap
	readRecords = wraptest.ReadRecords
	events      = wraptest.Events
	waitFor     = wraptest.WaitFor
	writeScript = wraptest.WriteScript
	fmtInt      = wraptest.FmtInt
)
