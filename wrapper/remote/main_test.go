package remote

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"jobwatch/internal/procfs"
	"jobwatch/wrapper"
)

// The tests run the wrapper as a real process, as package wrapper's do (this
// file is a copy of its main_test.go, with Remote set): this test binary,
// started with testEnv set, parses jobwatch run's flags and calls
// wrapper.RunFlags with Remote{}, and the wrapper re-executes the binary for
// the job.
const testEnv = "JOBWATCH_WRAPPER_TEST_RUN"

// testHostEnv sets the host the wrapper records (two wrappers as two
// hosts); testCheckEnv the MySQL lock's check interval.
const (
	testHostEnv  = "JOBWATCH_WRAPPER_TEST_HOST"
	testCheckEnv = "JOBWATCH_WRAPPER_TEST_CHECK_INTERVAL"
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

// wrapCmd returns the command for `jobwatch run ARGS...`.
func wrapCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), testEnv+"=1")
	return cmd
}

// wrap runs `jobwatch run ARGS...` to the end; it returns the exit code and stderr.
func wrap(t testing.TB, args ...string) (int, string) {
	t.Helper()
	cmd := wrapCmd(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running wrapper: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// record is a run record as read back; every field any event has.
type record struct {
	Time      string   `json:"time"`
	Job       string   `json:"job"`
	Event     string   `json:"event"`
	Host      string   `json:"host"`
	PID       int      `json:"pid"`
	RunID     string   `json:"run_id"`
	LockTTL   *float64 `json:"lock_ttl_seconds"`
	Status    string   `json:"status"`
	ExitCode  *int     `json:"exit_code"`
	Duration  *float64 `json:"duration_seconds"`
	Reason    string   `json:"reason"`
	Lock      string   `json:"lock"`
	HolderPID int      `json:"holder_pid"`
	Holder    string   `json:"holder"`
}

// The exact shapes of the three records: keys, their order, value formats.
var (
	prefixRE = `^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","job":"[a-zA-Z_][a-zA-Z0-9_.:-]*",`
	startRE  = regexp.MustCompile(prefixRE + `"event":"start","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}"(,"lock_ttl_seconds":[1-9]\d*(\.\d{1,3})?)?\}$`)
	endRE    = regexp.MustCompile(prefixRE + `"event":"end","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}",` +
		`"status":"(success|failure|timeout)","exit_code":\d+,"duration_seconds":\d+(\.\d{1,3})?(,"reason":"(lock_lost|lock_unavailable)")?\}$`)
	skipRE = regexp.MustCompile(prefixRE + `"event":"skip","host":"[^"]+","pid":[1-9]\d*,"reason":"(locked|lock_unavailable)",` +
		`("lock":"file"(,"holder_pid":([1-9]\d*),"holder":"[1-9]\d*")?|"lock":"(redis|mysql)"(,"holder":"[^"]+")?)\}$`)
	lostRE = regexp.MustCompile(prefixRE + `"event":"lock_lost","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}",` +
		`"lock":"(redis|mysql)","reason":"(key_gone|key_taken|unreachable|connection_lost|not_owner)"(,"holder":"[^"]+")?\}$`)
)

// readRecords reads the run log, failing the test on any line that is not
// exactly a well-formed record.
func readRecords(t testing.TB, path string) []record {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !startRE.MatchString(line) && !endRE.MatchString(line) && !skipRE.MatchString(line) && !lostRE.MatchString(line) {
			t.Fatalf("malformed record: %s", line)
		}
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("run log does not end with a newline: %q", data)
	}
	return recs
}

func events(recs []record) string {
	var ev []string
	for _, r := range recs {
		ev = append(ev, r.Event)
	}
	return strings.Join(ev, ",")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func writeScript(t testing.TB, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func intp(i int) *int { return &i }

func fmtInt(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// groupAlive reports whether a process other than a zombie is still in
// process group pgid (package wrapper's, on the shared /proc parser).
func groupAlive(pgid int) bool {
	for _, pid := range procfs.Pids() {
		if st, ok := procfs.ReadStat(pid); ok && st.PGRP == pgid && st.Live() {
			return true
		}
	}
	return false
}
