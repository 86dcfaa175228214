package wrapper

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	notExec := writeScript(t, dir, "notexec.sh", "#!/bin/sh\nexit 0\n", 0o644)
	noShebang := writeScript(t, dir, "garbage", "\x7fELF-not-really", 0o755)
	cases := []struct {
		name    string
		args    []string // after --log LOG
		code    int
		events  string // records written, in order
		status  string // of the end record
		recCode int    // exit_code of the end record
		errLine string // substring of the one stderr line; "" for none
	}{
		{"success", []string{"--job", "j", "--", "true"}, 0, "start,end", "success", 0, ""},
		{"failure", []string{"--job", "j", "--", "false"}, 1, "start,end", "failure", 1, ""},
		{"exit code passes", []string{"--job", "j", "--", "sh", "-c", "exit 3"}, 3, "start,end", "failure", 3, ""},
		{"exit 255", []string{"--job", "j", "--", "sh", "-c", "exit 255"}, 255, "start,end", "failure", 255, ""},
		{"died of SIGTERM", []string{"--job", "j", "--", "sh", "-c", "kill -TERM $$"}, 143, "start,end", "failure", 143, ""},
		{"died of SIGKILL", []string{"--job", "j", "--", "sh", "-c", "kill -KILL $$"}, 137, "start,end", "failure", 137, ""},
		{"args not through a shell", []string{"--job", "j", "--", "test", "a b", "=", "a b"}, 0, "start,end", "success", 0, ""},
		{"not found", []string{"--job", "j", "--", "no-such-command-jobwatch"}, 127, "end", "failure", 127, "no-such-command-jobwatch: executable file not found"},
		{"not found by path", []string{"--job", "j", "--", filepath.Join(dir, "missing")}, 127, "end", "failure", 127, "no such file or directory"},
		{"not executable", []string{"--job", "j", "--", notExec}, 126, "end", "failure", 126, "permission denied"},
		{"directory", []string{"--job", "j", "--", dir}, 126, "end", "failure", 126, "is a directory"},
		{"exec format error", []string{"--job", "j", "--", noShebang}, 126, "end", "failure", 126, "exec format error"},
		{"missing job", []string{"--", "true"}, 125, "", "", 0, "--job is required"},
		{"bad job name", []string{"--job", "no spaces", "--", "true"}, 125, "", "", 0, "invalid job name"},
		{"no command", []string{"--job", "j"}, 125, "end", "failure", 125, "no command given after --"},
		{"negative timeout", []string{"--job", "j", "--timeout", "-1s", "--", "true"}, 125, "end", "failure", 125, "--timeout must not be negative"},
		{"malformed timeout", []string{"--job", "j", "--timeout", "5x", "--kill-after", "soon", "--", "true"}, 125, "end", "failure", 125, `--timeout: "5x" is not a duration (like 90s, 30m, 1h30m, 1d, or seconds); --kill-after: "soon" is not`},
		{"timeout in bare seconds", []string{"--job", "j", "--timeout", "30", "--", "true"}, 0, "start,end", "success", 0, ""},
		{"durations as Prometheus writes them", []string{"--job", "j", "--timeout", "1d", "--kill-after", "1h30m", "--", "true"}, 0, "start,end", "success", 0, ""},
		{"skipped exit not a number", []string{"--job", "j", "--skipped-exit", "x", "--", "true"}, 125, "end", "failure", 125, `--skipped-exit: "x" is not a number`},
		{"bad skipped exit", []string{"--job", "j", "--skipped-exit", "256", "--", "true"}, 125, "end", "failure", 125, "--skipped-exit must be 0-255"},
		{"unknown skipped reason", []string{"--job", "j", "--skipped-exit", "75", "--skipped-reason", "busy", "--", "true"}, 125, "end", "failure", 125, `--skipped-reason must be one of [locked lock_unavailable disabled other], got "busy"`},
		{"bad skipped output", []string{"--job", "j", "--skipped-output", "(", "--", "true"}, 125, "end", "failure", 125, "--skipped-output: error parsing regexp"},
		{"skip code not a number", []string{"--job", "j", "--skip-exit-code", "x", "--", "true"}, 125, "end", "failure", 125, `--skip-exit-code: "x" is not a number`},
		{"bad skip code", []string{"--job", "j", "--skip-exit-code", "300", "--", "true"}, 125, "end", "failure", 125, "--skip-exit-code must be 0-255"},
		{"lock dir not a directory", []string{"--job", "j", "--lock", "/dev/null/x.lock", "--", "true"}, 125, "end", "failure", 125, "lock file: open"}, // a missing one is created: mkdir_test.go
		{"lock is a directory", []string{"--job", "j", "--lock", dir, "--", "true"}, 125, "end", "failure", 125, "lock file"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(dir, "runs"+strconv.Itoa(i)+".log")
			code, stderr := wrap(t, append([]string{"--log", log}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if tc.errLine == "" && stderr != "" {
				t.Errorf("unexpected stderr %q", stderr)
			}
			if tc.errLine != "" {
				if !strings.Contains(stderr, tc.errLine) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "jobwatch run: ") {
					t.Errorf("stderr %q, want one line with %q", stderr, tc.errLine)
				}
			}
			recs := readRecords(t, log)
			if got := events(recs); got != tc.events {
				t.Fatalf("records %q, want %q", got, tc.events)
			}
			if len(recs) == 0 {
				return
			}
			end := recs[len(recs)-1]
			if end.Status != tc.status || end.ExitCode == nil || *end.ExitCode != tc.recCode {
				t.Errorf("end record status %q exit_code %s, want %q %d", end.Status, fmtInt(end.ExitCode), tc.status, tc.recCode)
			}
			if end.Job != "j" {
				t.Errorf("job %q", end.Job)
			}
			if len(recs) == 2 && (recs[0].RunID != end.RunID || recs[0].PID != end.PID) {
				t.Errorf("start %+v and end %+v do not match", recs[0], end)
			}
		})
	}
}

// The start and end records name the job's own pid.
func TestRecordsNameJobPID(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	out := filepath.Join(dir, "out")
	code, stderr := wrap(t, "--log", log, "--job", "j", "--", "sh", "-c", `echo $$ > "$1"`, "sh", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,end" {
		t.Fatalf("records %s", events(recs))
	}
	if strconv.Itoa(recs[0].PID) != strings.TrimSpace(string(data)) {
		t.Errorf("start record pid %d, command's pid %s", recs[0].PID, data)
	}
	if recs[0].LockTTL != nil {
		t.Errorf("start record without a Redis lock has lock_ttl_seconds %v", *recs[0].LockTTL)
	}
	if recs[1].PID != recs[0].PID || recs[1].RunID != recs[0].RunID {
		t.Errorf("end record %+v does not match start %+v", recs[1], recs[0])
	}
	if *recs[1].Duration < 0 || *recs[1].Duration > 5 {
		t.Errorf("duration %v", *recs[1].Duration)
	}
}

// Eight wrappers started at once on one lock run the command exactly once;
// the other seven skip, naming the job's pid as the holder.
func TestLockConcurrent(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "j.lock")
	count := filepath.Join(dir, "count")
	const n = 8
	var wg sync.WaitGroup
	codes := make([]int, n)
	start := make(chan struct{})
	for i := range n {
		// The job holds the lock until the seven others have skipped (at most
		// 60 s), however slowly a loaded machine starts them. The run log may
		// not exist yet when the job starts (its start record is written
		// after it is born): a missing log counts as no skip.
		cmd := wrapCmd(t, "--log", log, "--lock", lock, "--job", "j", "--", "sh", "-c",
			`echo run >> "$1"; i=0; while n=$(grep -c '"skip"' "$2" 2>/dev/null); [ "${n:-0}" -lt 7 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`,
			"sh", count, log)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Error(err)
				return
			}
			codes[i] = cmd.ProcessState.ExitCode()
		}()
	}
	close(start)
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("wrapper %d exited %d, want 0", i, c)
		}
	}
	data, _ := os.ReadFile(count)
	if string(data) != "run\n" {
		t.Errorf("command ran %d times, want once", strings.Count(string(data), "run"))
	}
	recs := readRecords(t, log)
	var starts, ends, skips []record
	for _, r := range recs {
		switch r.Event {
		case "start":
			starts = append(starts, r)
		case "end":
			ends = append(ends, r)
		case "skip":
			skips = append(skips, r)
		}
	}
	if len(starts) != 1 || len(ends) != 1 || len(skips) != n-1 {
		t.Fatalf("records %s, want 1 start, 1 end, %d skips", events(recs), n-1)
	}
	if recs[len(recs)-1].Event != "end" {
		t.Errorf("end record is not last: %s", events(recs))
	}
	for _, s := range skips {
		if s.Reason != "locked" || s.Lock != "file" || s.HolderPID != starts[0].PID || s.Holder != strconv.Itoa(starts[0].PID) {
			t.Errorf("skip %+v, want reason locked, lock file, holder_pid and holder %d", s, starts[0].PID)
		}
		if s.PID == starts[0].PID {
			t.Errorf("skip record pid is the job's")
		}
	}
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatalf("lock file is gone after the runs: %v", err)
	}
	if perm := fi.Mode().Perm(); perm&^0o644 != 0 {
		t.Errorf("lock file mode %o, want 0644 or stricter", perm)
	}
}

func TestSkipExitCode(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "j.lock")
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	code, stderr := wrap(t, "--log", log, "--lock", lock, "--skip-exit-code", "75", "--job", "j", "--", "true")
	if code != 75 || stderr != "" {
		t.Fatalf("exit %d stderr %q, want 75 and nothing", code, stderr)
	}
	recs := readRecords(t, log)
	if events(recs) != "skip" || recs[0].HolderPID != os.Getpid() {
		t.Errorf("records %+v, want one skip with holder_pid %d (this test)", recs, os.Getpid())
	}
}

func TestLockRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "j.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	code, stderr := wrap(t, "--log", log, "--lock", link, "--job", "j", "--", "true")
	if code != ExitWrapper || !strings.Contains(stderr, "is a symlink") {
		t.Errorf("exit %d stderr %q, want %d and a symlink error", code, stderr, ExitWrapper)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("symlink target was created")
	}
	if recs := readRecords(t, log); events(recs) != "end" || recs[0].Status != "failure" {
		t.Errorf("records %+v, want one failed end", recs)
	}
}

// A wrapper killed with SIGKILL leaves its job holding the lock: the next
// wrapper skips until the job's process ends.
func TestLockOutlivesKilledWrapper(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "j.lock")
	first := wrapCmd(t, "--log", log, "--lock", lock, "--job", "j", "--", "sleep", "60")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	jobPID := startedJob(t, log)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	if err := unix.Kill(jobPID, 0); err != nil {
		t.Fatalf("job %d died with its wrapper: %v", jobPID, err)
	}

	code, _ := wrap(t, "--log", log, "--lock", lock, "--skip-exit-code", "75", "--job", "j", "--", "true")
	if code != 75 {
		t.Fatalf("second wrapper exited %d, want 75 (skip)", code)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,skip" || recs[1].HolderPID != jobPID {
		t.Fatalf("records %+v, want start and a skip held by %d", recs, jobPID)
	}

	if err := unix.Kill(-jobPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "lock released after the job ended", 10*time.Second, func() bool {
		code, _ := wrap(t, "--log", log, "--lock", lock, "--skip-exit-code", "75", "--job", "j", "--", "true")
		return code == 0
	})
}

// On timeout the whole process group gets SIGTERM, and SIGKILL after
// --kill-after: a grandchild ignoring SIGTERM does not survive.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	pids := filepath.Join(dir, "pids")
	script := `sh -c 'trap "" TERM; sleep 60' & echo $! >> "$1"; sleep 60 & echo $! >> "$1"; wait`
	begin := time.Now()
	code, stderr := wrap(t, "--log", log, "--job", "j", "--timeout", "300ms", "--kill-after", "700ms", "--", "sh", "-c", script, "sh", pids)
	took := time.Since(begin)
	if code != ExitTimeout {
		t.Fatalf("exit %d, want %d (stderr %q)", code, ExitTimeout, stderr)
	}
	if !strings.Contains(stderr, "timed out after 300ms") {
		t.Errorf("stderr %q", stderr)
	}
	if took < time.Second {
		t.Errorf("wrapper returned after %s: before --kill-after gave the TERM-ignoring child its time", took)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,end" || recs[1].Status != "timeout" || *recs[1].ExitCode != ExitTimeout {
		t.Fatalf("records %+v, want start and a timeout end", recs)
	}
	if d := *recs[1].Duration; d < 0.3 || d > 5 {
		t.Errorf("duration %v", d)
	}
	pgid := recs[0].PID
	if groupAlive(pgid, 0) {
		t.Errorf("processes of group %d survived the timeout", pgid)
	}
	data, _ := os.ReadFile(pids)
	for _, p := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(p)
		if b, err := os.ReadFile("/proc/" + p + "/stat"); err == nil {
			if st, ok := parseStat(b); ok && st.live() {
				t.Errorf("grandchild %d survived (state %c)", pid, st.state)
			}
		}
	}
}

// A job that obeys SIGTERM ends the run at once, not after --kill-after.
func TestTimeoutPromptWhenJobObeys(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	begin := time.Now()
	code, _ := wrap(t, "--log", log, "--job", "j", "--timeout", "200ms", "--", "sleep", "60")
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("took %s, want well under --kill-after (10s)", took)
	}
	if code != ExitTimeout {
		t.Errorf("exit %d", code)
	}
}

// SIGTERM, SIGINT and SIGHUP sent to the wrapper reach the job, and the run is
// recorded as it ended.
func TestSignalsForwarded(t *testing.T) {
	// The suite may run under nohup, and a wrapper started with a signal
	// ignored keeps it ignored (TestIgnoredSignalsStayIgnored): this process
	// takes the signals, so that the wrappers it starts have them at their
	// defaults.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Reset(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			cmd := wrapCmd(t, "--log", log, "--job", "j", "--", "sh", "-c", "sleep 60; :")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			jobPID := startedJob(t, log)
			waitFor(t, "sh to start its child", 10*time.Second, func() bool { return testproc.HasChild(jobPID, "sleep") })
			cmd.Process.Signal(sig)
			cmd.Wait()
			want := 128 + int(sig)
			if code := cmd.ProcessState.ExitCode(); code != want {
				t.Errorf("exit %d, want %d", code, want)
			}
			recs := readRecords(t, log)
			if events(recs) != "start,end" || recs[1].Status != "failure" || *recs[1].ExitCode != want {
				t.Errorf("records %+v, want a failed end with exit_code %d", recs, want)
			}
			waitFor(t, "the job's group to end", 5*time.Second, func() bool { return !groupAlive(jobPID, 0) })
		})
	}
}

// A wrapper started with SIGHUP ignored (nohup) leaves it ignored, for
// itself and its job, and still forwards SIGTERM: a SIGHUP does not end the
// run, the SIGTERM after it does.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.log")
	helper := wrapCmd(t, "--log", log, "--job", "j", "--", "sh", "-c", "sleep 60; :")
	cmd := exec.Command("nohup", helper.Args...)
	cmd.Env = helper.Env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	jobPID := startedJob(t, log)
	for _, pid := range []int{cmd.Process.Pid, jobPID} {
		if ign := ignoredSignals(t, pid); ign&(1<<(syscall.SIGHUP-1)) == 0 {
			t.Errorf("pid %d: SIGHUP not ignored (SigIgn %x)", pid, ign)
		}
	}
	waitFor(t, "sh to start its child", 10*time.Second, func() bool { return testproc.HasChild(jobPID, "sleep") })
	// An ignored signal is discarded when it is sent; one forwarded would
	// end the job before the SIGTERM (lower signals are delivered first).
	cmd.Process.Signal(syscall.SIGHUP)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	if recs := readRecords(t, log); events(recs) != "start,end" || *recs[1].ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("records %+v, want an end with exit_code %d", recs, 128+int(syscall.SIGTERM))
	}
	waitFor(t, "the job's group to end", 5*time.Second, func() bool { return !groupAlive(jobPID, 0) })
}

// startedJob waits for the start record in log and returns the job's pid;
// its process group is killed when the test ends.
func startedJob(t *testing.T, log string) int {
	t.Helper()
	var pid int
	waitFor(t, "start record", 10*time.Second, func() bool {
		if recs := readRecords(t, log); len(recs) > 0 {
			pid = recs[0].PID
			return true
		}
		return false
	})
	t.Cleanup(func() { unix.Kill(-pid, unix.SIGKILL) })
	return pid
}

// ignoredSignals is the SigIgn mask of process pid.
func ignoredSignals(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return 0
}

// Many wrappers appending to one log at once write only whole records, and
// every start has its end.
func TestRecordsUnderConcurrency(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := "job_" + strconv.Itoa(i%4)
			if code, stderr := wrap(t, "--log", log, "--job", job, "--", "true"); code != 0 {
				t.Errorf("exit %d: %s", code, stderr)
			}
		}()
	}
	wg.Wait()
	recs := readRecords(t, log)
	starts := map[string]record{}
	for _, r := range recs {
		switch r.Event {
		case "start":
			if _, dup := starts[r.RunID]; dup {
				t.Errorf("run_id %s reused", r.RunID)
			}
			starts[r.RunID] = r
		case "end":
			s, ok := starts[r.RunID]
			if !ok || s.PID != r.PID || s.Job != r.Job || r.Status != "success" {
				t.Errorf("end %+v does not match a start (%+v)", r, s)
			}
		}
	}
	if len(recs) != 2*n || len(starts) != n {
		t.Errorf("%d records, %d starts; want %d and %d", len(recs), len(starts), 2*n, n)
	}
}

// If the log cannot be written the command still runs; the wrapper says so
// on stderr, and exits non-zero only when the job succeeded.
func TestLogUnwritable(t *testing.T) {
	dir := t.TempDir()
	notDir := writeScript(t, dir, "file", "", 0o644)
	log := filepath.Join(notDir, "runs.log") // ENOTDIR, even for root
	marker := filepath.Join(dir, "ran")
	cases := []struct {
		name   string
		script string
		code   int
	}{
		{"job succeeded", `touch "$1"`, ExitWrapper},
		{"job failed", `touch "$1"; exit 4`, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			code, stderr := wrap(t, "--log", log, "--job", "j", "--", "sh", "-c", tc.script, "sh", marker)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the command did not run")
			}
			if !strings.Contains(stderr, "jobwatch run: job j: run log: ") || !strings.Contains(stderr, "not a directory") {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
}

func TestLogFileMode(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	if code, _ := wrap(t, "--log", log, "--job", "j", "--", "true"); code != 0 {
		t.Fatal(code)
	}
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^0o640 != 0 {
		t.Errorf("log mode %o, want 0640 or stricter", perm)
	}
}

// The job sees the lock as fd 3, and none of the wrapper's other files (the
// status and gate pipes at 4 and 5 in the job's process before the exec).
func TestJobFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "j.lock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock", lock}, lock + "\n"},
		{nil, ""},
	} {
		args := append([]string{"--log", log, "--job", "j"}, tc.args...)
		args = append(args, "--", "readlink", "/proc/self/fd/3", "/proc/self/fd/4", "/proc/self/fd/5")
		cmd := wrapCmd(t, args...)
		var out strings.Builder
		cmd.Stdout = &out
		cmd.Run()
		if out.String() != tc.want {
			t.Errorf("with %q the job's fds 3-5 are %q, want %q", tc.args, out.String(), tc.want)
		}
	}
}

// A skipping run names the job as the holder even when the wrapper holding
// the lock is slow to start it (a loaded machine): it looks again until the
// job exists, instead of naming the wrapper.
func TestLockHolderSlowWrapper(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "j.lock")
	locked := filepath.Join(dir, "locked")
	first := wrapCmd(t, "--log", log, "--lock", lock, "--job", "j", "--", "sleep", "60")
	first.Env = append(first.Env, testAfterLockEnv+"="+locked)
	starve, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if recs := readRecords(t, log); len(recs) > 0 && recs[0].Event == "start" {
			unix.Kill(-recs[0].PID, unix.SIGKILL)
		}
		first.Process.Kill()
		first.Wait()
	})
	waitFor(t, "the first wrapper to hold the lock", 10*time.Second, func() bool {
		_, err := os.Stat(locked)
		return err == nil
	})
	second := wrapCmd(t, "--log", log, "--lock", lock, "--skip-exit-code", "75", "--job", "j", "--", "true")
	var stderr strings.Builder
	second.Stderr = &stderr
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if second.ProcessState == nil {
			second.Process.Kill()
			second.Wait()
		}
	})
	// The second wrapper has the lock file open: it is about to find it
	// locked by a wrapper with no job yet. Only now does the first start
	// its job.
	waitFor(t, "the second wrapper to open the lock file", 10*time.Second, func() bool { return testproc.HoldsOpen(second.Process.Pid, lock) })
	starve.Close()
	second.Wait()
	if code := second.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("second wrapper exited %d (%s), want 75 (skip)", code, stderr.String())
	}
	// The job exists before its wrapper writes the start record, so the
	// skip may be written first: wait for both, in either order.
	var start, skip *record
	waitFor(t, "the start and the skip records", 10*time.Second, func() bool {
		start, skip = nil, nil
		recs := readRecords(t, log)
		for i := range recs {
			switch recs[i].Event {
			case "start":
				start = &recs[i]
			case "skip":
				skip = &recs[i]
			}
		}
		return start != nil && skip != nil && len(recs) == 2
	})
	if skip.HolderPID != start.PID || skip.HolderPID == first.Process.Pid {
		t.Errorf("skip names holder %d; the job is %d, its wrapper %d", skip.HolderPID, start.PID, first.Process.Pid)
	}
}

// The run log is never reached through a symlink (dangling or not) and must
// be a regular file: the job still runs, the wrapper says why on stderr and
// exits 125, and nothing is written or created elsewhere.
func TestLogRefusesSymlinkAndNonRegular(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, log string) (check func(t *testing.T))
		want  string
	}{
		{"dangling symlink", func(t *testing.T, dir, log string) func(*testing.T) {
			target := filepath.Join(dir, "elsewhere")
			if err := os.Symlink(target, log); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				if _, err := os.Lstat(target); !os.IsNotExist(err) {
					t.Errorf("the symlink's target was created")
				}
			}
		}, "is a symlink"},
		{"symlink to a file", func(t *testing.T, dir, log string) func(*testing.T) {
			target := writeScript(t, dir, "precious", "keep\n", 0o644)
			if err := os.Symlink(target, log); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				if b, _ := os.ReadFile(target); string(b) != "keep\n" {
					t.Errorf("the symlink's target was written: %q", b)
				}
			}
		}, "is a symlink"},
		{"fifo nobody reads", func(t *testing.T, dir, log string) func(*testing.T) {
			if err := unix.Mkfifo(log, 0o600); err != nil {
				t.Fatal(err)
			}
			return func(*testing.T) {}
		}, "is not a regular file"},
		{"fifo with a reader", func(t *testing.T, dir, log string) func(*testing.T) {
			if err := unix.Mkfifo(log, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := os.OpenFile(log, os.O_RDONLY|unix.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return func(t *testing.T) {
				buf := make([]byte, 100)
				if n, _ := r.Read(buf); n > 0 {
					t.Errorf("a record went into the fifo: %q", buf[:n])
				}
			}
		}, "is not a regular file"},
		{"directory", func(t *testing.T, dir, log string) func(*testing.T) {
			if err := os.Mkdir(log, 0o700); err != nil {
				t.Fatal(err)
			}
			return func(*testing.T) {}
		}, "run log: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "runs.log")
			check := tc.setup(t, dir, log)
			marker := filepath.Join(dir, "ran")
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, stderr = wrap(t, "--log", log, "--job", "j", "--", "touch", marker)
			}()
			testproc.Receive(t, done, 30*time.Second, "the wrapper, which hangs on the run log")
			if code != ExitWrapper || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", code, stderr, ExitWrapper, tc.want)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the command did not run")
			}
			check(t)
		})
	}
}
