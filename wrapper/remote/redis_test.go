package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/procfs"
	"github.com/jobwatch/jobwatch/internal/redisvalue"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/wrapper"
)

// waitJob is a job that runs until the file $1 exists, then exits 0.
const waitJob = `while [ ! -e "$1" ]; do sleep 0.02; done`

// startWrapper starts `jobwatch run ARGS...` as host, and returns a function
// waiting for its exit code and stderr.
func startWrapper(t *testing.T, host string, env []string, args ...string) func() (int, string) {
	t.Helper()
	cmd := wrapCmd(t, args...)
	cmd.Env = append(cmd.Env, testHostEnv+"="+host)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var code int
	wait := func() (int, string) {
		once.Do(func() {
			cmd.Wait()
			code = cmd.ProcessState.ExitCode()
		})
		return code, stderr.String()
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		wait()
	})
	return wait
}

// waitRecord waits for a record of event in the run log and returns it.
func waitRecord(t *testing.T, log, event string, within time.Duration) record {
	t.Helper()
	var got record
	waitFor(t, "a "+event+" record in "+log, within, func() bool {
		for _, r := range readRecords(t, log) {
			if r.Event == event {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// killGroupAtEnd kills the job's process group when the test ends, whatever
// happened.
func killGroupAtEnd(t *testing.T, pgid int) {
	t.Cleanup(func() { unix.Kill(-pgid, unix.SIGKILL) })
}

// Two hosts (two wrappers with their own lock files) and one Redis: one
// runs, the other skips naming the Redis layer and the holder's token; the
// key is gone once the run has ended.
func TestRedisTwoHosts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	release := filepath.Join(dir, "release")
	common := []string{"--job", "nightly", "--lock-redis", srv.URL(), "--lock-ttl", "10s", "--kill-after", "1s"}

	waitA := startWrapper(t, "hostA", nil, append(common, "--log", logA, "--lock", filepath.Join(dir, "a.lock"), "--", "sh", "-c", waitJob, "sh", release)...)
	start := waitRecord(t, logA, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	if start.LockTTL == nil || *start.LockTTL != 10 {
		t.Errorf("start record's lock_ttl_seconds %v, want 10", start.LockTTL)
	}

	code, stderr := startWrapper(t, "hostB", nil, append(common, "--log", logB, "--lock", filepath.Join(dir, "b.lock"), "--skip-exit-code", "75", "--", "true")...)()
	if code != 75 || stderr != "" {
		t.Fatalf("second host: exit %d stderr %q, want 75 and nothing", code, stderr)
	}
	recs := readRecords(t, logB)
	if events(recs) != "skip" {
		t.Fatalf("second host's records %s, want skip", events(recs))
	}
	holderRE := regexp.MustCompile(`^hostA:[1-9]\d*:` + start.RunID + `$`)
	if s := recs[0]; s.Reason != "locked" || s.Lock != "redis" || !holderRE.MatchString(s.Holder) || s.Host != "hostB" {
		t.Errorf("skip %+v, want reason locked, lock redis, holder %s", s, holderRE)
	}
	if v, err := rc.Get(context.Background(), "jobwatch:nightly").Result(); err != nil || v != recs[0].Holder {
		t.Errorf("key holds %q (%v), the skip names %q", v, err, recs[0].Holder)
	}

	os.WriteFile(release, nil, 0o600)
	if code, stderr := waitA(); code != 0 {
		t.Fatalf("first host: exit %d: %s", code, stderr)
	}
	if n, _ := rc.Exists(context.Background(), "jobwatch:nightly").Result(); n != 0 {
		t.Errorf("the key outlives the run")
	}
	if recs := readRecords(t, logA); events(recs) != "start,end" || recs[1].Reason != "" {
		t.Errorf("first host's records %+v", recs)
	}
}

// A job running for 3 x the TTL keeps its key: it is renewed every third
// of the TTL and never left to expire.
func TestRedisRenewal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	release := filepath.Join(dir, "release")
	// Renewed every 667 ms: a wrapper starved for over a second on a loaded
	// machine would still keep it.
	const ttl = 2 * time.Second
	wait := startWrapper(t, "h", nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", ttl.String(), "--kill-after", "200ms",
		"--", "sh", "-c", waitJob, "sh", release)
	start := waitRecord(t, log, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	token, err := rc.Get(ctx, "jobwatch:j").Result()
	if err != nil {
		t.Fatalf("no key while the job runs: %v", err)
	}
	began := time.Now()
	renewed := false
	for time.Since(began) < 3*ttl {
		v, err := rc.Get(ctx, "jobwatch:j").Result()
		if err != nil || v != token {
			t.Fatalf("after %s the key is %q (%v), want %q", time.Since(began), v, err, token)
		}
		pttl, err := rc.PTTL(ctx, "jobwatch:j").Result()
		if err != nil || pttl <= 0 || pttl > ttl {
			t.Fatalf("key's TTL %s (%v), want within (0, %s]", pttl, err, ttl)
		}
		if pttl > ttl*9/10 && time.Since(began) > ttl/2 {
			renewed = true
		}
		time.Sleep(20 * time.Millisecond) // paces the samples of the key over three TTLs

	}
	if !renewed {
		t.Error("the key's TTL was never seen renewed")
	}
	os.WriteFile(release, nil, 0o600)
	if code, stderr := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n, _ := rc.Exists(ctx, "jobwatch:j").Result(); n != 0 {
		t.Error("the key outlives the run")
	}
	if recs := readRecords(t, log); events(recs) != "start,end" {
		t.Errorf("records %s", events(recs))
	}
}

// A wrapper killed with SIGKILL renews nothing more: its job's process
// group dies with it, its key expires within the TTL, and another host may
// run.
func TestRedisKilledWrapperKeyExpires(t *testing.T) {
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	const ttl = time.Second
	cmd := wrapCmd(t, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", ttl.String(), "--kill-after", "200ms", "--", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := waitRecord(t, log, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	// The job's reaper kills its whole group when the wrapper dies.
	waitFor(t, "the job's group to die with its wrapper", 5*time.Second, func() bool { return !groupAlive(start.PID) })
	if pttl, err := rc.PTTL(ctx, "jobwatch:j").Result(); err != nil || pttl > ttl {
		t.Fatalf("key's TTL after the kill %s (%v), want at most %s", pttl, err, ttl)
	}
	waitFor(t, "the key to expire", 10*time.Second, func() bool {
		n, _ := rc.Exists(ctx, "jobwatch:j").Result()
		return n == 0
	})
	// The TTL read right after the kill already bounds the expiry; this
	// catches anything renewing the key after it (with room for a slow
	// test process).
	if took := time.Since(killed); took > ttl+3*time.Second {
		t.Errorf("key expired %s after the kill, want within the TTL (%s)", took, ttl)
	}
	if code, stderr := wrap(t, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "5s", "--kill-after", "1s", "--", "true"); code != 0 {
		t.Errorf("next run: exit %d %s", code, stderr)
	}
}

// The key deleted or overwritten while the job runs: lock_lost is recorded
// within ttl/3 (and a margin for a loaded machine), the job's whole process
// group is killed, grandchildren included, and the run ends failed with
// reason lock_lost and exit 125. An overwritten key survives the release.
func TestRedisLockLost(t *testing.T) {
	for _, tc := range []struct {
		name, reason, other string
	}{
		{"deleted", "key_gone", ""},
		{"overwritten", "key_taken", "otherhost:1:00000000000000aa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, "")
			rc := srv.Client(t)
			ctx := context.Background()
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			pids := filepath.Join(dir, "pids")
			const ttl = 3 * time.Second
			script := `sh -c 'trap "" TERM; sleep 60' & echo $! >> "$1"; sleep 60 & echo $! >> "$1"; wait`
			wait := startWrapper(t, "h", nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", ttl.String(),
				"--kill-after", "500ms", "--", "sh", "-c", script, "sh", pids)
			start := waitRecord(t, log, "start", 20*time.Second)
			killGroupAtEnd(t, start.PID)
			waitFor(t, "the grandchildren", 10*time.Second, func() bool {
				b, _ := os.ReadFile(pids)
				return len(strings.Fields(string(b))) == 2
			})
			changed := time.Now()
			if tc.other == "" {
				rc.Del(ctx, "jobwatch:j")
			} else {
				rc.Set(ctx, "jobwatch:j", tc.other, time.Minute)
			}
			lost := waitRecord(t, log, "lock_lost", 20*time.Second)
			if took := time.Since(changed); took > ttl/3+2*time.Second {
				t.Errorf("lock_lost recorded %s after the change, want within ttl/3 (%s)", took, ttl/3)
			}
			if lost.Lock != "redis" || lost.Reason != tc.reason || lost.Holder != tc.other || lost.RunID != start.RunID || lost.PID != start.PID {
				t.Errorf("lock_lost %+v, want lock redis, reason %s, holder %q", lost, tc.reason, tc.other)
			}
			code, stderr := wait()
			if code != wrapper.ExitWrapper || !strings.Contains(stderr, "redis lock lost ("+tc.reason+")") {
				t.Errorf("exit %d stderr %q, want %d and the loss", code, stderr, wrapper.ExitWrapper)
			}
			recs := readRecords(t, log)
			if events(recs) != "start,lock_lost,end" {
				t.Fatalf("records %s", events(recs))
			}
			if e := recs[2]; e.Status != "failure" || *e.ExitCode != wrapper.ExitWrapper || e.Reason != "lock_lost" {
				t.Errorf("end %+v, want failure, 125, reason lock_lost", e)
			}
			b, _ := os.ReadFile(pids)
			for _, p := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(p)
				if st, ok := procfs.ReadStat(pid); ok && st.Live() {
					t.Errorf("grandchild %d survived the lost lock", pid)
				}
			}
			v, err := rc.Get(ctx, "jobwatch:j").Result()
			if tc.other != "" && v != tc.other {
				t.Errorf("the other holder's key is %q (%v) after the release, want %q", v, err, tc.other)
			}
		})
	}
}

// With --on-lock-lost=warn the job finishes; the end record keeps the
// reason, and the release leaves another holder's key alone.
func TestRedisLockLostWarn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	release := filepath.Join(dir, "release")
	wait := startWrapper(t, "h", nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "3s", "--kill-after", "1s",
		"--on-lock-lost", "warn", "--", "sh", "-c", waitJob, "sh", release)
	start := waitRecord(t, log, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	const other = "otherhost:1:00000000000000bb"
	rc.Set(ctx, "jobwatch:j", other, time.Minute)
	waitRecord(t, log, "lock_lost", 20*time.Second)
	os.WriteFile(release, nil, 0o600)
	code, stderr := wait()
	if code != 0 || !strings.Contains(stderr, "--on-lock-lost=warn") {
		t.Errorf("exit %d stderr %q, want 0 and a warning", code, stderr)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,lock_lost,end" || recs[2].Status != "success" || recs[2].Reason != "lock_lost" {
		t.Errorf("records %+v, want a successful end with reason lock_lost", recs)
	}
	if v, _ := rc.Get(ctx, "jobwatch:j").Result(); v != other {
		t.Errorf("release deleted another holder's key: now %q", v)
	}
}

// The start record carries the lease the run holds: --lock-ttl, else 2 x
// --timeout.
func TestRedisStartRecordTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	for _, tc := range []struct {
		name string
		args []string
		want float64
	}{
		{"lock-ttl", []string{"--lock-ttl", "1500ms", "--kill-after", "200ms"}, 1.5},
		{"default from timeout", []string{"--timeout", "45s"}, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "runs.log")
			args := append([]string{"--job", "j", "--log", log, "--lock-redis", srv.URL()}, tc.args...)
			if code, stderr := wrap(t, append(args, "--", "true")...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			recs := readRecords(t, log)
			if events(recs) != "start,end" {
				t.Fatalf("records %s", events(recs))
			}
			if got := recs[0].LockTTL; got == nil || *got != tc.want {
				t.Errorf("lock_ttl_seconds %v, want %v", got, tc.want)
			}
		})
	}
}

// Redis down at start, in each --lock-unavailable mode.
func TestRedisUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	url := srv.URL()
	srv.Stop()
	for _, tc := range []struct {
		mode   string
		code   int
		events string
		check  func(t *testing.T, recs []record)
	}{
		{"skip", 75, "skip", func(t *testing.T, recs []record) {
			if s := recs[0]; s.Reason != "lock_unavailable" || s.Lock != "redis" {
				t.Errorf("skip %+v, want reason lock_unavailable, lock redis", s)
			}
		}},
		{"run", 0, "start,end", func(t *testing.T, recs []record) {
			if e := recs[1]; e.Status != "success" || e.Reason != "lock_unavailable" {
				t.Errorf("end %+v, want success with reason lock_unavailable", e)
			}
			if s := recs[0]; s.LockTTL != nil {
				t.Errorf("start of a run without its lock has lock_ttl_seconds %v", *s.LockTTL)
			}
		}},
		{"fail", wrapper.ExitWrapper, "end", func(t *testing.T, recs []record) {
			if e := recs[0]; e.Status != "failure" || *e.ExitCode != wrapper.ExitWrapper {
				t.Errorf("end %+v, want a failure, 125", e)
			}
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			marker := filepath.Join(dir, "ran")
			code, stderr := wrap(t, "--job", "j", "--log", log, "--lock", filepath.Join(dir, "j.lock"), "--lock-redis", url, "--lock-ttl", "5s", "--kill-after", "1s",
				"--lock-unavailable", tc.mode, "--skip-exit-code", "75", "--", "touch", marker)
			if code != tc.code || !strings.Contains(stderr, "redis "+srv.Addr()) || !strings.Contains(stderr, "connection refused") {
				t.Errorf("exit %d stderr %q, want %d and the server unreachable", code, stderr, tc.code)
			}
			_, err := os.Stat(marker)
			if ran := err == nil; ran != (tc.mode == "run") {
				t.Errorf("command ran: %v", ran)
			}
			recs := readRecords(t, log)
			if events(recs) != tc.events {
				t.Fatalf("records %s, want %s", events(recs), tc.events)
			}
			tc.check(t, recs)
		})
	}
}

// Redis restarted (without persistence) while a job runs: every key is
// gone, and the next renewal finds the lock lost. Redis stopped for good:
// after a whole TTL without a renewal the lock counts as lost.
func TestRedisRestartLosesLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		restart bool
		reasons string
	}{
		{"restarted", true, "key_gone unreachable"},
		{"stopped", false, "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, "")
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			const ttl = 3 * time.Second
			wait := startWrapper(t, "h", nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", ttl.String(), "--kill-after", "200ms", "--", "sleep", "60")
			start := waitRecord(t, log, "start", 20*time.Second)
			killGroupAtEnd(t, start.PID)
			srv.Stop()
			stopped := time.Now()
			if tc.restart {
				srv.Restart()
			}
			lost := waitRecord(t, log, "lock_lost", 20*time.Second)
			if !strings.Contains(tc.reasons, lost.Reason) {
				t.Errorf("lock_lost %+v, want reason in %q", lost, tc.reasons)
			}
			if !tc.restart && time.Since(stopped) < ttl-ttl/3 {
				t.Errorf("lost after %s: before the lease could have expired", time.Since(stopped))
			}
			if code, _ := wait(); code != wrapper.ExitWrapper {
				t.Errorf("exit %d, want %d", code, wrapper.ExitWrapper)
			}
		})
	}
}

// Eight wrappers at once on four hosts (two per local lock file) and one
// Redis: one run, seven skips, refused by the local or the shared layer.
func TestLockEightWrappersTwoLayers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	count := filepath.Join(dir, "count")
	const n = 8
	// The job holds both locks until the seven others have skipped (a
	// missing log counts as no skip).
	script := `echo run >> "$1"; i=0; while n=$(grep -c '"skip"' "$2" 2>/dev/null); [ "${n:-0}" -lt 7 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
	var waits []func() (int, string)
	for i := range n {
		host := fmt.Sprintf("host%d", i/2)
		waits = append(waits, startWrapper(t, host, nil, "--job", "j", "--log", log, "--lock", filepath.Join(dir, host+".lock"),
			"--lock-redis", srv.URL(), "--lock-ttl", "30s", "--kill-after", "1s", "--", "sh", "-c", script, "sh", count, log))
	}
	for i, w := range waits {
		if code, stderr := w(); code != 0 {
			t.Errorf("wrapper %d exited %d: %s", i, code, stderr)
		}
	}
	if b, _ := os.ReadFile(count); string(b) != "run\n" {
		t.Errorf("command ran %d times, want once", strings.Count(string(b), "run"))
	}
	recs := readRecords(t, log)
	var starts, skips int
	layers := map[string]int{}
	for _, r := range recs {
		switch r.Event {
		case "start":
			starts++
		case "skip":
			skips++
			layers[r.Lock]++
			// A file-layer skip may find its holder gone (a wrapper that
			// itself skipped on the shared layer), a redis one names it.
			if r.Reason != "locked" || (r.Lock == "redis" && r.Holder == "") {
				t.Errorf("skip %+v, want reason locked, and a holder on the redis layer", r)
			}
		}
	}
	if starts != 1 || skips != n-1 || layers["file"]+layers["redis"] != n-1 {
		t.Errorf("%d starts, %d skips %v; want 1 and %d", starts, skips, layers, n-1)
	}
}

// Flag values that cannot work are errors, recorded as failed runs.
func TestSharedLockFlagErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"both servers", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s", "--lock-mysql", "u@tcp(127.0.0.1:1)/"}, "give one of them"},
		{"redis without ttl", []string{"--lock-redis", "redis://127.0.0.1:1"}, "--lock-ttl is required"},
		{"ttl too short", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "100ms"}, "at least 1s"},
		{"ttl too short for kill-after", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s"}, "--lock-ttl 5s is too short for --kill-after 10s"},
		{"ttl without redis", []string{"--lock-ttl", "5s"}, "--lock-redis only"},
		{"bad url", []string{"--lock-redis", "http://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s"}, "--lock-redis: "},
		{"mysql name too long", []string{"--lock-mysql", "u@tcp(127.0.0.1:1)/", "--lock-name", strings.Repeat("x", 65)}, "at most 64"},
		{"mysql default name too long", []string{"--job", "j" + strings.Repeat("x", 60), "--lock-mysql", "u@tcp(127.0.0.1:1)/"}, "at most 64"},
		{"odd characters", []string{"--lock-mysql", "u@tcp(127.0.0.1:1)/", "--lock-name", "a'; DROP"}, "may only contain"},
		{"empty", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s", "--lock-name", " "}, "may only contain"},
		{"unset variable", []string{"--lock-mysql", "u:${JW_NOT_SET_PW}@tcp(127.0.0.1:1)/"}, "JW_NOT_SET_PW"},
		{"bad mode", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s", "--lock-unavailable", "wait"}, "skip, run or fail"},
		{"bad on-lock-lost", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s", "--on-lock-lost", "ignore"}, "kill or warn"},
		{"bad table", []string{"--record-mysql", "u@tcp(127.0.0.1:1)/db", "--record-table", "runs; DROP"}, "--record-table"},
		{"no log, no table", []string{"--log", "-"}, "needs --record-mysql"},
		{"dsn and file", []string{"--lock-mysql", "u@tcp(127.0.0.1:1)/", "--lock-mysql-dsn-file", "/nonexistent"}, "--lock-mysql and --lock-mysql-dsn-file: give one of them"},
		{"missing dsn file", []string{"--record-mysql-dsn-file", "/nonexistent/dsn"}, "--record-mysql-dsn-file: open /nonexistent/dsn"},
		{"empty password file", []string{"--lock-redis", "redis://127.0.0.1:1", "--lock-ttl", "5s", "--kill-after", "1s", "--lock-redis-password-file", "/dev/null"}, "--lock-redis-password-file: /dev/null is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			marker := filepath.Join(dir, "ran")
			args := append([]string{"--job", "j", "--log", log}, tc.args...)
			args = append(args, "--", "touch", marker)
			code, stderr := wrap(t, args...)
			if code != wrapper.ExitWrapper || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", code, stderr, wrapper.ExitWrapper, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

// A password (in the URL or its file) never appears in stderr or records:
// not on a skip, not when the server refuses it, not when it is down.
func TestRedisPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const pw = "Sup3r-S3cret-pw"
	srv := redistest.Start(t, pw)
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte(pw+"\n"), 0o600)
	wrongFile := filepath.Join(dir, "wrong")
	os.WriteFile(wrongFile, []byte("wrong-"+pw+"\n"), 0o600)
	release := filepath.Join(dir, "release")
	addr := srv.Addr()

	wait := startWrapper(t, "h", nil, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "10s", "--kill-after", "1s", "--", "sh", "-c", waitJob, "sh", release)
	start := waitRecord(t, log, "start", 20*time.Second)
	killGroupAtEnd(t, start.PID)
	var all strings.Builder
	for _, args := range [][]string{
		{"--lock-redis", srv.URL()}, // skipped, held
		{"--lock-redis", "redis://" + addr, "--lock-redis-password-file", pwFile},    // skipped, held
		{"--lock-redis", "redis://" + addr, "--lock-redis-password-file", wrongFile}, // refused
		{"--lock-redis", "redis://:" + pw + "@127.0.0.1:1/0"},                        // unreachable
		{"--lock-redis", "redis://:" + pw + "@" + addr + "/notanumber"},              // bad URL
	} {
		full := append([]string{"--job", "j", "--log", log, "--lock-ttl", "10s", "--kill-after", "1s"}, args...)
		code, stderr := wrap(t, append(full, "--", "true")...)
		t.Logf("%d %s", code, stderr)
		all.WriteString(stderr)
	}
	os.WriteFile(release, nil, 0o600)
	_, stderr := wait()
	all.WriteString(stderr)
	b, _ := os.ReadFile(log)
	all.Write(b)
	if strings.Contains(all.String(), pw) {
		t.Errorf("the password shows:\n%s", all.String())
	}
	if !strings.Contains(all.String(), `"lock":"redis","holder":"h:`) {
		t.Errorf("no skip naming the holder in:\n%s", all.String())
	}
}

// Only the password is hidden: an unreachable server's address stays
// readable whatever the password (none, one letter, one that also occurs
// in the address).
func TestRedisUnreachableNamesServer(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "runs.log")
	for _, url := range []string{"redis://127.0.0.1:1/0", "redis://:p@127.0.0.1:1/0", "redis://:1@127.0.0.1:1/0"} {
		code, stderr := wrap(t, "--job", "j", "--log", log, "--lock-redis", url, "--lock-ttl", "5s", "--kill-after", "1s", "--lock-unavailable", "fail", "--", "true")
		if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stderr, ":p@") || strings.Contains(stderr, ":1@") {
			t.Errorf("%s: exit %d, stderr %q; want a failure naming 127.0.0.1:1 without the password", url, code, stderr)
		}
	}
}

// A key holding anyone's value makes a skip record the runlog source
// accepts: control characters replaced, the holder cut to 255 bytes.
func TestRedisHostileHolder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	rc := srv.Client(t)
	rc.Set(context.Background(), "jobwatch:j", "evil\nline\x00"+strings.Repeat("x", 400), time.Minute)
	log := filepath.Join(t.TempDir(), "runs.log")
	if code, stderr := wrap(t, "--job", "j", "--log", log, "--lock-redis", srv.URL(), "--lock-ttl", "5s", "--kill-after", "1s", "--", "true"); code != 0 || stderr != "" {
		t.Fatalf("exit %d stderr %q, want a quiet skip", code, stderr)
	}
	recs := readRecords(t, log)
	if events(recs) != "skip" || !strings.HasPrefix(recs[0].Holder, "evil?line?xxx") || len(recs[0].Holder) != 255 { // wrapper's maxHolder
		t.Errorf("records %+v, want one skip with the holder cleaned and cut", recs)
	}
}

// largeValue is the size of the lock values the memory tests use: far
// above what reading a holder may cost.
const largeValue = 64 << 20

// A key holding a value of 64 MB is read only as far as a holder is shown,
// when a run skips on it and when a lease finds it taken: each allocates a
// small fraction of it (GET read it whole).
func TestRedisLargeHolder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	ctx := context.Background()
	lock := func(t *testing.T, token string) *redisLock {
		l, err := newRedisLock(srv.URL(), "", "jobwatch:big", token, time.Second, 0, &secret.Redactor{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		if err := l.client.Ping(ctx).Err(); err != nil { // dialled before measuring
			t.Fatal(err)
		}
		return l
	}
	t.Run("skip", func(t *testing.T) {
		srv.SetLarge(t, "jobwatch:big", "web2:4242:other-run", largeValue)
		l := lock(t, "h:1:run")
		var held bool
		var holder string
		var err error
		if n := testproc.Allocated(func() { held, holder, err = l.Acquire(ctx) }); n > 1<<20 {
			t.Errorf("a skip on a %d-byte value allocated %d bytes, want under 1 MiB", largeValue, n)
		}
		if err != nil || held || !strings.HasPrefix(holder, "web2:4242:other-run\x00") || len(holder) != redisvalue.Max {
			t.Errorf("Acquire = %v, %q (%d bytes), %v; want not held, the holder's first %d bytes", held, holder[:min(len(holder), 30)], len(holder), err, redisvalue.Max)
		}
	})
	t.Run("taken while held", func(t *testing.T) {
		srv.Client(t).Del(ctx, "jobwatch:big")
		l := lock(t, "h:1:run")
		if held, _, err := l.Acquire(ctx); err != nil || !held {
			t.Fatalf("Acquire = %v, %v", held, err)
		}
		srv.SetLarge(t, "jobwatch:big", "web2:4242:other-run", largeValue)
		var loss wrapper.LockLoss
		var lost bool
		// The watch waits a third of the lease for its first renewal, while
		// the package's other tests (four at a time) allocate too: 2 MB of
		// theirs were seen in that window. 8 MiB still rules out the value.
		if n := testproc.Allocated(func() { loss, lost = l.Watch(ctx, func(time.Time) {}) }); n > 8<<20 {
			t.Errorf("a renewal finding a %d-byte value allocated %d bytes, want under 8 MiB", largeValue, n)
		}
		if !lost || loss.Reason != lostKeyTaken || !strings.HasPrefix(loss.Holder, "web2:4242:other-run\x00") || len(loss.Holder) != redisvalue.Max {
			t.Errorf("Watch = %v, %q (%d bytes); want the key taken, the holder's first %d bytes", lost, loss.Reason, len(loss.Holder), redisvalue.Max)
		}
		// Not ours: released by no one, and reported as lost.
		// (A job that ended within the lease lost nothing: this one ends
		// after it.)
		if loss, lost, err := l.Release(ctx, time.Now().Add(time.Hour)); err != nil || !lost || loss.Reason != lostKeyTaken {
			t.Fatalf("Release = %+v, %v, %v; want the key taken", loss, lost, err)
		}
		if n, _ := srv.Client(t).StrLen(ctx, "jobwatch:big").Result(); n != largeValue {
			t.Errorf("the other holder's key has %d bytes after our release, want %d", n, largeValue)
		}
	})
}

// A lease whose token is longer than what the scripts read of a value for a
// holder is still renewed and released: they read one byte more than it.
func TestRedisLongToken(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "")
	ctx := context.Background()
	token := strings.Repeat("h", 300) + ":1:run"
	l, err := newRedisLock(srv.URL(), "", "jobwatch:long", token, time.Second, 0, &secret.Redactor{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if held, _, err := l.Acquire(ctx); err != nil || !held {
		t.Fatalf("Acquire = %v, %v", held, err)
	}
	// Our token and one byte more: not ours.
	rc := srv.Client(t)
	if held, holder, err := l.Acquire(ctx); err != nil || !held || holder != "" {
		t.Fatalf("Acquire again = %v, %q, %v; want our own token found", held, holder, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	rc.Append(ctx, "jobwatch:long", "x")
	loss, lost := l.Watch(wctx, func(time.Time) {})
	cancel()
	if !lost || loss.Reason != lostKeyTaken {
		t.Errorf("Watch after the value grew by a byte = %+v, %v; want the key taken", loss, lost)
	}
	rc.Set(ctx, "jobwatch:long", token, 0)
	if _, lost, err := l.Release(ctx, time.Now()); err != nil || lost {
		t.Fatalf("Release = %v, %v; want ours, released", lost, err)
	}
	if n, _ := rc.Exists(ctx, "jobwatch:long").Result(); n != 0 {
		t.Error("our own key is not released")
	}
}
