// Package wraptest runs jobwatch run as a real process in the tests of
// package wrapper and package wrapper/remote: the test binary, started with
// Env set, parses jobwatch run's flags and runs the wrapper (each package's
// TestMain does), and the wrapper re-executes the binary for the job.
package wraptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/procfs"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Env, set to 1, makes the test binary a wrapper.
const Env = "JOBWATCH_WRAPPER_TEST_RUN"

// HostEnv sets the host the wrapper records (two wrappers as two hosts);
// CheckEnv the MySQL lock's check interval.
const (
	HostEnv  = "JOBWATCH_WRAPPER_TEST_HOST"
	CheckEnv = "JOBWATCH_WRAPPER_TEST_CHECK_INTERVAL"
)

// Cmd returns the command for `jobwatch run ARGS...`.
func Cmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), Env+"=1")
	return cmd
}

// Wrap runs `jobwatch run ARGS...` to the end; it returns the exit code and stderr.
func Wrap(t testing.TB, args ...string) (int, string) {
	t.Helper()
	cmd := Cmd(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running wrapper: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// Record is a run record as read back; every field any event has.
type Record struct {
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
	startRE  = regexp.MustCompile(prefixRE + `"event":"start","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}"(,"lock":"file")?(,"lock_ttl_seconds":[1-9]\d*(\.\d{1,3})?)?\}$`)
	endRE    = regexp.MustCompile(prefixRE + `"event":"end","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}",` +
		`"status":"(success|failure|timeout|skipped)","exit_code":\d+,"duration_seconds":\d+(\.\d{1,3})?` +
		`(,"reason":"(lock_lost|lock_unavailable|locked|disabled|other)")?\}$`)
	skipRE = regexp.MustCompile(prefixRE + `"event":"skip","host":"[^"]+","pid":[1-9]\d*,"reason":"(locked|lock_unavailable)",` +
		`("lock":"file"(,"holder_pid":([1-9]\d*),"holder":"[1-9]\d*")?|"lock":"(redis|mysql)"(,"holder":"[^"]+")?)\}$`)
	lostRE = regexp.MustCompile(prefixRE + `"event":"lock_lost","host":"[^"]+","pid":[1-9]\d*,"run_id":"[0-9a-f]{16}",` +
		`"lock":"(redis|mysql)","reason":"(key_gone|key_taken|unreachable|connection_lost|not_owner)"(,"holder":"[^"]+")?\}$`)
)

// ReadRecords reads the run log, failing the test on any line that is not
// exactly a well-formed record.
func ReadRecords(t testing.TB, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !startRE.MatchString(line) && !endRE.MatchString(line) && !skipRE.MatchString(line) && !lostRE.MatchString(line) {
			t.Fatalf("malformed record: %s", line)
		}
		var r Record
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

// Events lists the records' events, comma-separated.
func Events(recs []Record) string {
	var ev []string
	for _, r := range recs {
		ev = append(ev, r.Event)
	}
	return strings.Join(ev, ",")
}

// WaitFor polls cond until it holds, failing the test when it has not
// within d (testproc.WaitUntil).
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	testproc.WaitUntil(t, d, what, cond)
}

// WriteScript writes an executable (mode) file.
func WriteScript(t testing.TB, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// FmtInt prints *p, or <nil>.
func FmtInt(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// GroupAlive reports whether a process other than a zombie is still in
// process group pgid.
func GroupAlive(pgid int) bool {
	for _, pid := range procfs.Pids() {
		if st, ok := procfs.ReadStat(pid); ok && st.PGRP == pgid && st.Live() {
			return true
		}
	}
	return false
}
