package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binDir holds jobwatch-run and jobwatch, built once (binaries) into the
// directory TestMain makes and removes: side by side, as /usr/bin has them.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jobwatch-run-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds jobwatch-run and jobwatch, as the Makefile does (static),
// and returns their paths.
func binaries(t *testing.T) (run, jobwatch string) {
	t.Helper()
	buildOnce.Do(func() {
		for _, b := range []string{"jobwatch-run", "jobwatch"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, b), "github.com/jobwatch/jobwatch/cmd/"+b)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "jobwatch-run"), filepath.Join(binDir, "jobwatch")
}

// execute runs bin with args and returns its output and exit code.
func execute(t *testing.T, env []string, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// records reads a run log's records.
func records(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("run log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// lastEnd returns the last record of the run log at path, which must be
// the end record of a run whose start record precedes it.
func lastEnd(t *testing.T, path string) map[string]any {
	t.Helper()
	recs := records(t, path)
	if len(recs) < 2 || recs[len(recs)-1]["event"] != "end" || recs[len(recs)-2]["event"] != "start" {
		t.Fatalf("run log %s: %v, want a start and an end record last", path, recs)
	}
	return recs[len(recs)-1]
}

// heavyDeps are packages whose presence in jobwatch-run would mean it links
// the exporter, the shared locks' clients or the network stack: each
// initialises itself (or its dependencies do) at every start.
var heavyDeps = []string{"net", "net/http", "crypto/tls", "database/sql", "runtime/metrics",
	"text/template", "html/template", "github.com/jobwatch/jobwatch/wrapper/remote"}

// TestRunLinksOnlyTheWrapper: jobwatch-run links no package outside
// jobwatch's own (the exporter's aside), golang.org/x/sys and the standard
// library, and none of heavyDeps.
func TestRunLinksOnlyTheWrapper(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/jobwatch/jobwatch/cmd/jobwatch-run").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps gave %v", deps)
	}
	heavy := map[string]bool{}
	for _, d := range heavyDeps {
		heavy[d] = true
	}
	for _, d := range deps {
		if heavy[d] || !allowedInRun(d) {
			t.Errorf("jobwatch-run links %s", d)
		}
	}
}

// allowedInRun reports whether package pkg may be linked into jobwatch-run
// (heavyDeps aside): the standard library, golang.org/x/sys, and jobwatch's
// packages below the exporter.
func allowedInRun(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") {
		return true // the standard library
	}
	for _, p := range []string{"github.com/jobwatch/jobwatch/exporter", "github.com/jobwatch/jobwatch/collector",
		"github.com/jobwatch/jobwatch/config", "github.com/jobwatch/jobwatch/sources", "github.com/jobwatch/jobwatch/status"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return false
		}
	}
	return strings.HasPrefix(pkg, "github.com/jobwatch/jobwatch/") || strings.HasPrefix(pkg, "golang.org/x/sys/")
}

// TestRunInitialisesOnlyTheWrapper runs the built jobwatch-run with Go's
// init trace: the packages that do work before main are all allowed
// (allowedInRun, none of heavyDeps), and the run is recorded.
func TestRunInitialisesOnlyTheWrapper(t *testing.T) {
	run, _ := binaries(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	out, code := execute(t, []string{"GODEBUG=inittrace=1"}, run,
		"--job", "t", "--log", logPath, "--lock", filepath.Join(dir, "t.lock"), "--timeout", "10s", "--", "true")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var inits []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "init "); ok {
			pkg, _, _ := strings.Cut(rest, " @")
			inits = append(inits, pkg)
		}
	}
	if len(inits) < 10 || !strings.Contains(strings.Join(inits, " "), "github.com/jobwatch/jobwatch/wrapper") {
		t.Fatalf("init trace without the wrapper:\n%s", out)
	}
	for _, pkg := range inits {
		for _, h := range heavyDeps {
			if pkg == h {
				t.Errorf("a plain run initialises %s", pkg)
			}
		}
		if !allowedInRun(pkg) {
			t.Errorf("a plain run initialises %s", pkg)
		}
	}
	if end := lastEnd(t, logPath); end["status"] != "success" {
		t.Errorf("end record %v, want a success", end)
	}
}

// TestRunAsJobwatchRun: what jobwatch-run runs itself and what it hands to
// jobwatch run end as `jobwatch run` with the same arguments does.
func TestRunAsJobwatchRun(t *testing.T) {
	run, jobwatch := binaries(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		status string // the end record's; "" when the run is not recorded
	}{
		{"plain, the job's exit code", []string{"--job", "t", "--log", logPath, "--", "sh", "-c", "exit 3"}, 3, "failure"},
		{"help (handed off)", []string{"--help"}, 0, ""},
		{"without -- (handed off)", []string{"--job", "t", "--log", logPath, "true"}, 0, "success"},
		{"a usage error (handed off)", []string{"--job", "t", "--no-such-flag", "--", "true"}, 2, ""},
		// A table that refuses connections: the run goes on, and says so.
		{"a table (handed off)", []string{"--job", "t", "--log", logPath, "--record-mysql", "u:pw@tcp(127.0.0.1:1)/db", "--", "true"}, 0, "success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs [2]string
			for i, argv := range [][]string{append([]string{run}, tc.args...), append([]string{jobwatch, "run"}, tc.args...)} {
				before := len(records(t, logPath))
				out, code := execute(t, nil, argv[0], argv[1:]...)
				if code != tc.code {
					t.Errorf("%q: exit %d, want %d\n%s", argv, code, tc.code, out)
				}
				if recs := records(t, logPath); tc.status == "" && len(recs) != before {
					t.Errorf("%q: recorded %v", argv, recs[before:])
				} else if tc.status != "" && (len(recs) != before+2 || lastEnd(t, logPath)["status"] != tc.status) {
					t.Errorf("%q: records %v, want a start and an end (%s) after %d", argv, recs, tc.status, before)
				}
				outs[i] = out
			}
			if outs[0] != outs[1] {
				t.Errorf("jobwatch-run says\n%s\njobwatch run says\n%s", outs[0], outs[1])
			}
		})
	}
}

// TestRunWithoutJobwatch: with no jobwatch beside it or in PATH,
// jobwatch-run says so for what it would hand off; a run with a table or a
// shared lock is recorded as the wrapper records a server it cannot use.
func TestRunWithoutJobwatch(t *testing.T) {
	run, _ := binaries(t)
	dir := t.TempDir()
	alone := filepath.Join(dir, "jobwatch-run")
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "runs.log")
	env := []string{"PATH=" + filepath.Join(dir, "nothing-here")}
	const missing = "jobwatch-run: this command line needs jobwatch run, and jobwatch is neither beside jobwatch-run nor in PATH\n"

	out, code := execute(t, env, alone, "--help")
	if code != 125 || out != missing {
		t.Errorf("--help: exit %d, %q; want 125, %q", code, out, missing)
	}
	out, code = execute(t, env, alone, "--job", "t", "--log", logPath, "--lock-redis", "redis://127.0.0.1:1/0", "--lock-ttl=10s", "--", "true")
	if code != 125 || !strings.HasPrefix(out, missing) {
		t.Errorf("--lock-redis: exit %d, %q; want 125, %q first", code, out, missing)
	}
	if !strings.Contains(out, "not available here") {
		t.Errorf("--lock-redis: %q does not say the lock is not available here", out)
	}
	// A run refused before it starts has an end record alone.
	if recs := records(t, logPath); len(recs) != 1 || recs[0]["status"] != "failure" || recs[0]["exit_code"] != 125.0 {
		t.Errorf("--lock-redis: records %v, want one end record, a failure exiting 125", recs)
	}
	truePath, err := exec.LookPath("true") // PATH finds no jobwatch, and so no true
	if err != nil {
		t.Fatal(err)
	}
	out, code = execute(t, env, alone, "--job", "t", "--log", logPath, "--", truePath)
	if code != 0 || out != "" {
		t.Errorf("a plain run: exit %d, %q", code, out)
	}
	if end := lastEnd(t, logPath); end["status"] != "success" {
		t.Errorf("a plain run: end record %v", end)
	}
}
