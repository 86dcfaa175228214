package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// instance is one running jobwatch process.
type instance struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	logs *testproc.Buffer
}

// The binary the package's tests run: built once, by the first test that
// asks (buildBinary), into binDir, which TestMain makes and removes.
var (
	binDir    string
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// parallel is how many of the package's tests run at once when -parallel
// is not given: they mostly wait on jobwatch's timers (a second's health
// checks and saves, the late window), not on the CPU, so more than
// GOMAXPROCS (go test's default) run side by side on a 2-core machine.
const parallel = 4

// TestMain makes the directory the binary is built into once for all the
// tests, which run it side by side (each test still has its own temp
// directory, state and port), and sets -parallel.
func TestMain(m *testing.M) {
	testproc.DefaultParallel(parallel)
	dir, err := os.MkdirTemp("", "jobwatch-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary returns the path of the jobwatch binary, built once for the
// whole package (a build per test took a few seconds each, 40 times).
func buildBinary(t testing.TB) string {
	t.Helper()
	skipShortBinary(t)
	buildOnce.Do(func() {
		bin := filepath.Join(binDir, "jobwatch")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/jobwatch/jobwatch/cmd/jobwatch").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// skipShortBinary skips a test that builds and runs the jobwatch binary
// under go test -short: a build and a real process per test are what made
// -short take minutes; the full suite runs them.
func skipShortBinary(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the jobwatch binary: skipped in -short")
	}
}

// minWait is the least a wait on jobwatch is bounded by: what a test says
// it takes on a quiet machine is often a second or two, and a loaded
// machine running the tests side by side can take ten times that. The
// bound only stops a broken program; the waits end as soon as what they
// wait for is seen.
const minWait = 30 * time.Second

func freePort(t testing.TB) string { return testproc.FreeAddr(t) }

// startJobwatch starts jobwatch with no start-up hold: the tests that
// writeConfig writes text as dir/jobwatch.yml and returns its path.
func writeConfig(t testing.TB, dir, text string) string {
	t.Helper()
	cfg := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfg, text)
	return cfg
}

// use it look at what they wrote at once.
func startJobwatch(t testing.TB, bin, configFile, stateDir, addr string) *instance {
	t.Helper()
	return startJobwatchArgs(t, bin, configFile, stateDir, addr, "--sources.startup-hold=0s")
}

func startJobwatchArgs(t testing.TB, bin, configFile, stateDir, addr string, extra ...string) *instance {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--config.file=" + configFile, "--state.path=" + stateDir, "--web.listen-address=" + addr, "--log.level=debug", "--web.enable-lifecycle"}, extra...)...)
	logs := &testproc.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, cmd: cmd, addr: addr, logs: logs}
	in.cleanup()
	in.waitHealthy()
	return in
}

// cleanup kills the process at the end of the test if it still runs, and
// prints its log if the test failed.
func (in *instance) cleanup() {
	in.t.Cleanup(func() {
		if in.t.Failed() {
			in.t.Logf("log of jobwatch on %s:\n%s", in.addr, in.logs.String())
		}
		if in.cmd.ProcessState == nil {
			in.cmd.Process.Kill()
			in.cmd.Wait()
		}
	})
}

// waitHealthy waits until jobwatch answers /-/healthy.
func (in *instance) waitHealthy() {
	in.t.Helper()
	testproc.Eventually(in.t, minWait, "jobwatch to come up on "+in.addr, func() error {
		resp, err := http.Get("http://" + in.addr + "/-/healthy")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

func (in *instance) kill(sig syscall.Signal) {
	in.t.Helper()
	in.cmd.Process.Signal(sig)
	in.cmd.Wait()
}

// scrape returns every sample of /metrics as "name{label="v",...}" -> value,
// labels sorted.
func (in *instance) scrape() (map[string]float64, string) {
	in.t.Helper()
	resp, err := http.Get("http://" + in.addr + "/metrics")
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		in.t.Fatalf("parsing /metrics: %v", err)
	}
	samples := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, lp := range m.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(ls)
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				samples[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				samples[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				samples[strings.Replace(key, name, name+"_count", 1)] = float64(m.Histogram.GetSampleCount())
				samples[strings.Replace(key, name, name+"_sum", 1)] = m.Histogram.GetSampleSum()
			case m.Untyped != nil:
				samples[key] = m.Untyped.GetValue()
			}
		}
	}
	return samples, string(body)
}

// noSeries, wanted of a sample, is its absence: a counter that appears
// once it counts (docs/metrics.md) and never did.
var noSeries = math.Inf(-1)

// waitFor polls /metrics until every wanted sample has its value. within
// is what it takes on a quiet machine; the wait is bounded by minWait at
// least.
// absentAtZero are the series jobwatch leaves out until they count
// (docs/metrics.md, series that appear when they first count): waitFor
// takes no such series for a want of 0.
var absentAtZero = regexp.MustCompile(`^jobwatch_job_(runs_total\{.*result="(timeout|lost|too_short|unknown)"|(skips_total|lock_lost_total|duplicate_runs_total|overlaps_total|missed_runs_total|unexpected_runs_total|consecutive_missed_runs)\{)`)

func (in *instance) waitFor(within time.Duration, want map[string]float64) map[string]float64 {
	in.t.Helper()
	var got map[string]float64
	testproc.EventuallyEvery(in.t, max(within, minWait), 100*time.Millisecond, "the samples on /metrics", func() error {
		got, _ = in.scrape()
		var diffs []string
		for k, v := range want {
			if g, ok := got[k]; v == noSeries {
				if ok {
					diffs = append(diffs, fmt.Sprintf("%s = %v, want no series", k, g))
				}
			} else if !ok && v == 0 && absentAtZero.MatchString(k) {
				continue
			} else if !ok || g != v {
				diffs = append(diffs, fmt.Sprintf("%s = %v (present %v), want %v", k, g, ok, v))
			}
		}
		if len(diffs) == 0 {
			return nil
		}
		sort.Strings(diffs)
		return errors.New("\n  " + strings.Join(diffs, "\n  "))
	})
	return got
}

type runLog struct {
	t    *testing.T
	path string
}

func (l runLog) append(lines ...string) {
	l.t.Helper()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	defer f.Close()
	// One write: a source reads the records of one append together.
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		l.t.Fatal(err)
	}
}

func rec(ts time.Time, job, event string, pid int, extra string) string {
	s := fmt.Sprintf(`{"time":%q,"job":%q,"event":%q,"host":"e2e-host","pid":%d`, ts.UTC().Format(time.RFC3339Nano), job, event, pid)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func success(ts time.Time, job string, pid int) []string {
	return []string{
		rec(ts, job, "start", pid, ""),
		rec(ts.Add(2*time.Second), job, "end", pid, `"status":"success","exit_code":0,"duration_seconds":2`),
	}
}

const e2eConfig = `
jobs:
  - name: stats
    every: 1h
    timeout: 25m
  - name: backup
    every: 24h
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`

// TestEndToEnd runs the real binary on a run log, rotates the log both ways,
// kills jobwatch with SIGKILL and restarts it, and checks the figures on
// /metrics each time.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	log := runLog{t, filepath.Join(dir, "runs.log")}
	cfg := filepath.Join(dir, "jobwatch.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, e2eConfig, log.path), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, "state")
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)

	// History written before jobwatch first starts is read from the beginning.
	log.append(success(base, "stats", 100)...)
	log.append(`garbage that is not a record`, rec(base, "unknown_job", "start", 1, ""))
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	in.waitFor(5*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="stats",result="success"}`:    1,
		`jobwatch_source_parse_errors_total{source="runs"}`:             1,
		`jobwatch_source_unknown_job_records_total{source="runs"}`:      1,
		`jobwatch_source_up{source="runs",type="runlog"}`:               1,
		`jobwatch_job_last_success_timestamp_seconds{job_name="stats"}`: float64(base.Add(2 * time.Second).Unix()),
		`jobwatch_job_stale{job_name="stats"}`:                          1,
		`jobwatch_config_last_reload_successful`:                        1,
	})
	// Appends show up within a second or two.
	log.append(success(base.Add(time.Hour), "stats", 101)...)
	log.append(rec(base.Add(time.Hour+time.Minute), "stats", "skip", 102, `"reason":"locked","holder_pid":101`))
	in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 2,
		`jobwatch_job_skips_total{job_name="stats",reason="locked"}`: 1,
		`jobwatch_job_consecutive_skips{job_name="stats"}`:           1,
	})

	// Rotation by rename and create; a last line written to the old file
	// after the rename is still read.
	if err := os.Rename(log.path, log.path+".1"); err != nil {
		t.Fatal(err)
	}
	runLog{t, log.path + ".1"}.append(success(base.Add(2*time.Hour), "stats", 103)...)
	log.append(success(base.Add(2*time.Hour+time.Minute), "backup", 200)...)
	in.waitFor(3*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="stats",result="success"}`:  3,
		`jobwatch_job_runs_total{job_name="backup",result="success"}`: 1,
	})

	// Rotation by copytruncate.
	data, _ := os.ReadFile(log.path)
	os.WriteFile(log.path+".2", data, 0o644)
	if err := os.Truncate(log.path, 0); err != nil {
		t.Fatal(err)
	}
	// A run started a minute ago: within the job's 25m timeout.
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	log.append(rec(started, "stats", "start", 104, ""))
	shown := in.waitFor(3*time.Second, map[string]float64{
		`jobwatch_job_running{job_name="stats"}`:                                               1,
		`jobwatch_job_run_start_timestamp_seconds{host="e2e-host",job_name="stats",pid="104"}`: float64(started.Unix()),
		`jobwatch_job_runs_total{job_name="backup",result="success"}`:                          1,
	})

	// kill -9, records written while jobwatch is down, restart: every
	// counter continues, none counts a record twice.
	// What a scrape shows is what was saved: the state file holds it.
	waitSavedRecords(t, stateDir, "runs", uint64(shown[`jobwatch_source_records_total{source="runs"}`]))
	in.kill(syscall.SIGKILL)
	log.append(rec(started.Add(30*time.Second), "stats", "end", 104, `"status":"failure","exit_code":3`))
	log.append(rec(started.Add(31*time.Second), "stats", "skip", 105, `"reason":"locked"`))
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	got := in.waitFor(5*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 3,
		`jobwatch_job_runs_total{job_name="stats",result="failure"}`: 1,
		`jobwatch_job_running{job_name="stats"}`:                     0,
		`jobwatch_job_skips_total{job_name="stats",reason="locked"}`: 2,
		`jobwatch_job_consecutive_failures{job_name="stats"}`:        1,
		`jobwatch_job_last_exit_code{job_name="stats"}`:              3,
		`jobwatch_source_parse_errors_total{source="runs"}`:          1,
		`jobwatch_source_records_total{source="runs"}`:               13,
		`jobwatch_job_duration_seconds_count{job_name="stats"}`:      4,
	})
	since := got[`jobwatch_job_seconds_since_last_success{job_name="stats"}`]
	if want := time.Since(base.Add(2*time.Hour + 2*time.Second)).Seconds(); since < want-5 || since > want+5 {
		t.Errorf("seconds since last success %v, want about %v", since, want)
	}

	// A run whose process dies without an end record is closed as lost
	// within 10 s.
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	log.append(strings.Replace(rec(time.Now(), "backup", "start", sleeper.Process.Pid, ""), "e2e-host", host, 1))
	in.waitFor(5*time.Second, map[string]float64{`jobwatch_job_running{job_name="backup"}`: 1}) // on time: shown once the run log's late window has passed
	sleeper.Process.Kill()
	sleeper.Wait()
	in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_running{job_name="backup"}`:                  0,
		`jobwatch_job_runs_total{job_name="backup",result="lost"}`: 1,
	})

	// The exposition passes promtool's linter.
	_, body := in.scrape()
	promtool := exec.Command("promtool", "check", "metrics")
	promtool.Stdin = strings.NewReader(body)
	if out, err := promtool.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// A bad config is rejected on reload and the running one is kept; a
	// good one is taken on SIGHUP.
	os.WriteFile(cfg, []byte("jobs:\n  - name: stats\n    every: soon\n"), 0o644)
	resp, err := http.Post("http://"+in.addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(msg), "soon") {
		t.Errorf("reload of a bad config: %d %s", resp.StatusCode, msg)
	}
	in.waitFor(time.Second, map[string]float64{
		`jobwatch_config_last_reload_successful`:                     0,
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 3,
	})
	os.WriteFile(cfg, []byte(strings.Replace(fmt.Sprintf(e2eConfig, log.path), "sources:", "  - name: extra\n    every: 5m\nsources:", 1)), 0o644)
	in.cmd.Process.Signal(syscall.SIGHUP)
	in.waitFor(3*time.Second, map[string]float64{
		`jobwatch_config_last_reload_successful`:                     1,
		`jobwatch_job_runs_total{job_name="extra",result="success"}`: 0,
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 3,
	})

	// SIGTERM stops it cleanly.
	in.kill(syscall.SIGTERM)
	if code := in.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM: %d\n%s", code, in.logs.String())
	}
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	os.WriteFile(good, fmt.Appendf(nil, e2eConfig, filepath.Join(dir, "runs.log")), 0o644)
	out, err := exec.Command(bin, "check-config", "--config.file="+good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 jobs, 1 source: OK") {
		t.Fatalf("good config: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("jobs:\n  - name: a\n    every: 1x\n  - name: a\n    every: 1h\nsources:\n  - name: s\n    type: runlog\n    format: csv\n"), 0o644)
	out, err = exec.Command(bin, "check-config", "--config.file="+bad).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("bad config: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{`bad duration "1x"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	os.WriteFile(bad, []byte("jobs:\n  - name: a\n    every: 1h\n  - name: a\n    every: 1h\nsources:\n  - name: s\n    type: runlog\n    format: csv\n"), 0o644)
	out, _ = exec.Command(bin, "check-config", "--config.file="+bad).CombinedOutput()
	for _, want := range []string{`job "a": duplicate job name`, `source "s": path is required`, `source "s": format must be json, logfmt, regex or cron`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A bad duration and an unknown key do not hide the other problems.
	golden, err := os.ReadFile("../../config/testdata/collects-type-errors.golden")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../config/testdata/collects-type-errors.yml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, example, 0o644)
	out, err = exec.Command(bin, "check-config", "--config.file="+bad).CombinedOutput()
	if want := "config " + bad + ": " + string(golden); exitCode(err) != 1 || string(out) != want {
		t.Errorf("check-config on the example of every kind of problem: exit %d\n%s\nwant:\n%s", exitCode(err), out, want)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
