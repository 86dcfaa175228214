package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
	"github.com/jobwatch/jobwatch/wrapper"
)

// pausedWrapper starts a wrapper, waits for its start record, and stops
// the wrapper (SIGSTOP) but not its job. It returns the start record, and
// resume, which continues the wrapper and returns its exit code and stderr.
func pausedWrapper(t *testing.T, log string, env []string, args ...string) (record, func() (int, string)) {
	t.Helper()
	cmd := wrapCmd(t, args...)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT); cmd.Process.Kill(); cmd.Wait() })
	start := waitRecord(t, log, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return start, func() (int, string) {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
}

// A wrapper paused past its lease while its job runs: the job's reaper
// stops the job at the lease's deadline, before the key can expire; on
// resume the wrapper records lock_lost (unreachable) and exits 125.
func TestRedisPausedWrapperJobStopped(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	log := filepath.Join(t.TempDir(), "runs.log")
	start, resume := pausedWrapper(t, log, nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "2s",
		"--kill-after", "200ms", "--", "sleep", "600")
	// The reaper holds the stop deadline from the job's start, so the
	// wrapper may be paused before its first renewal: the job ends about
	// 1.5 s after the lock was taken. The wait's bound is for a broken
	// reaper (the job would sleep on), not a measure of it.
	waitFor(t, "the reaper to stop the job at the lease's deadline", 2*time.Minute, func() bool { return !groupAlive(start.PID) })
	if n, _ := rc.Exists(context.Background(), "jobwatch:j").Result(); n != 1 {
		// The deadline is 2s less 200ms, 20ms and 250ms from the last
		// renewal sent: the key outlives the job by about half a second.
		t.Log("the key had expired when the job's end was seen (a slow test process?)")
	}
	code, stderr := resume()
	if code != wrapper.ExitWrapper || !strings.Contains(stderr, "not renewed in time") {
		t.Errorf("exit %d stderr %q, want %d and the deadline", code, stderr, wrapper.ExitWrapper)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,lock_lost,end" || recs[1].Reason != wrapper.LostUnreachable || recs[2].Reason != "lock_lost" || recs[2].Status != "failure" {
		t.Errorf("records %+v, want start, lock_lost (unreachable), end failed for lock_lost", recs)
	}
}

// A wrapper paused after its job has finished, until its key has expired:
// the job ended within its lease, so nothing was lost and nothing is
// recorded as lost.
func TestRedisPausedWrapperJobDone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	log := filepath.Join(t.TempDir(), "runs.log")
	start, resume := pausedWrapper(t, log, nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "1s",
		"--kill-after", "100ms", "--", "sleep", "0.1")
	waitFor(t, "the job to end", 20*time.Second, func() bool { return !groupAlive(start.PID) })
	waitFor(t, "the key to expire", 20*time.Second, func() bool {
		n, _ := rc.Exists(context.Background(), "jobwatch:j").Result()
		return n == 0
	})
	if code, stderr := resume(); code != 0 || stderr != "" {
		t.Errorf("exit %d stderr %q, want 0 and nothing", code, stderr)
	}
	if recs := readRecords(t, log); events(recs) != "start,end" || recs[1].Status != "success" || recs[1].Reason != "" {
		t.Errorf("records %+v, want start, end success", recs)
	}
}

// A MySQL wrapper paused past its check deadline while its job finishes:
// the lock lives as long as its connection, RELEASE_LOCK proves it held,
// and no lock_lost is recorded.
func TestMySQLPausedWrapperHeld(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	dsn := srv.RootDSN("")
	log := filepath.Join(t.TempDir(), "runs.log")
	start, resume := pausedWrapper(t, log, []string{testCheckEnv + "=1s"}, "--job", "j", "--log", log, "--lock-mysql", dsn,
		"--kill-after", "1s", "--", "sleep", "2")
	waitFor(t, "the job to end", 30*time.Second, func() bool { return !groupAlive(start.PID) })
	code, stderr := resume()
	if code != 0 || strings.Contains(stderr, "lost") {
		t.Errorf("exit %d stderr %q, want 0 and no loss", code, stderr)
	}
	if recs := readRecords(t, log); events(recs) != "start,end" || recs[1].Status != "success" {
		t.Errorf("records %+v, want start, end success", recs)
	}
}

// Each acquisition hands the job a fencing token, one more than the last:
// Redis counts in the key's fence key, MySQL in a row of
// jobwatch_lock_fence in the DSN's database; a DSN without a database
// gives none, and says so.
func TestFencingTokens(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t, "")
	maria := mariadbtest.Start(t)
	db := maria.NewDatabase(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
		say  string
	}{
		{"redis", []string{"--lock-redis", redis.URL(), "--lock-ttl", "5s", "--kill-after", "1s"}, "1 2 3", ""},
		{"mysql", []string{"--lock-mysql", maria.RootDSN(db)}, "1 2 3", ""},
		{"mysql without a database", []string{"--lock-mysql", maria.RootDSN(""), "--lock-name", "other"}, "- - -", "names no database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, out := filepath.Join(dir, "runs.log"), filepath.Join(dir, "tokens")
			for range 3 {
				args := append([]string{"--job", "j", "--log", log}, tc.args...)
				args = append(args, "--", "sh", "-c", `echo "${JOBWATCH_FENCING_TOKEN:--}" >> "$1"`, "sh", out)
				code, stderr := wrap(t, args...)
				if code != 0 || !strings.Contains(stderr, tc.say) || tc.say == "" && stderr != "" {
					t.Fatalf("exit %d stderr %q, want 0 and %q", code, stderr, tc.say)
				}
			}
			b, _ := os.ReadFile(out)
			if got := strings.Join(strings.Fields(string(b)), " "); got != tc.want {
				t.Errorf("tokens %q, want %q", got, tc.want)
			}
		})
	}
}
