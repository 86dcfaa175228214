package remote

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/wrapper"
)

// A run lasting a whole number of check intervals (5 s by default) ends as
// a keep-alive check starts: the lock is released all the same, on its own
// connection, with nothing on stderr (cron mails it) and no connection
// aborted on the server. Each length runs three times, all nine at once (before the fix, about one
// run in two failed).
func TestMySQLReleaseAtCheckTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs of 5, 10 and 15 s")
	}
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	dsn := srv.RootDSN(db)
	admin := srv.DB(t, db)
	aborted := func() int64 {
		var name string
		var n int64
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := aborted()
	// All nine are started before any is waited for: as subtests calling
	// t.Parallel they would run -parallel at a time, 45 s of sleeping.
	type run struct {
		job  string
		wait func() (int, string)
	}
	var runs []run
	for _, secs := range []int{5, 10, 15} {
		for i := range 3 {
			job := fmt.Sprintf("whole_%d_%d", secs, i)
			log := filepath.Join(t.TempDir(), "runs.log")
			runs = append(runs, run{job, startWrapper(t, "h", nil, "--job", job, "--log", log, "--lock-mysql", dsn, "--", "sleep", fmt.Sprint(secs))})
		}
	}
	for _, r := range runs {
		t.Run(r.job, func(t *testing.T) {
			code, stderr := r.wait()
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			var free sql.NullInt64
			if err := admin.QueryRow("SELECT IS_FREE_LOCK(?)", "jobwatch."+r.job).Scan(&free); err != nil || free.Int64 != 1 {
				t.Errorf("the lock is still held after the run (%v)", err)
			}
		})
	}
	if n := aborted() - before; n != 0 {
		t.Errorf("%d connections aborted by the wrappers, want none", n)
	}
}

// A server that hangs (SIGSTOP) just after a keep-alive check answered, the
// worst moment: with the default check interval (5 s) and --on-lock-lost,
// the wrapper has recorded the loss, stopped the job and exited within 5 s.
func TestMySQLHungServerLostWithinInterval(t *testing.T) {
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	admin := srv.DB(t, db)
	log := filepath.Join(t.TempDir(), "runs.log")
	wait := startWrapper(t, "h", nil, "--job", "hang", "--log", log, "--lock-mysql", srv.RootDSN(db), "--", "sh", "-c", "sleep 60 & wait")
	start := waitRecord(t, log, "start", 30*time.Second)
	killGroupAtEnd(t, start.PID)

	// The wrapper's queries are prepared statements, the test's are not:
	// a check has answered when the server has executed one more.
	executed := func() int64 {
		var name string
		var n int64
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := executed()
	testproc.EventuallyEvery(t, 30*time.Second, 5*time.Millisecond, "a keep-alive check", func() error {
		if executed() == before {
			return errors.New("none yet")
		}
		return nil
	})
	srv.Hang()
	hung := time.Now()

	code, stderr := wait()
	exited := time.Since(hung)
	lost := waitRecord(t, log, "lock_lost", time.Second)
	at, err := time.Parse(time.RFC3339Nano, lost.Time)
	if err != nil {
		t.Fatal(err)
	}
	decided := at.Sub(hung)
	t.Logf("lock_lost %s after the hang, exit %s after: %d %s", decided, exited, code, stderr)
	// Decided 4.5 s after the check was asked, the wrapper then stops the
	// job, which a loaded machine may delay by a moment. Before the fix,
	// the loss took 10 s.
	if decided > 5*time.Second || exited > decided+time.Second {
		t.Errorf("lock_lost %s and exit %s after the server hung, want both within 5 s", decided, exited)
	}
	if lost.Reason != "connection_lost" || code != wrapper.ExitWrapper || !strings.Contains(stderr, "mysql lock lost (connection_lost)") {
		t.Errorf("lock_lost %+v, exit %d, stderr %q", lost, code, stderr)
	}
}
