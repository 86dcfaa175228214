package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Clocks through the binary (issue 39). A step of this host's wall clock
// is made as a real one is, CLOCK_REALTIME moving while CLOCK_MONOTONIC
// runs on: jobwatch is built as users build it, with Go's time package
// overlaid (go build -overlay) so that time.Now's wall reading is moved by
// the offset, in nanoseconds, that the file named by
// JOBWATCH_TEST_CLOCK_STEP_FILE holds (read again every 100 ms); its
// monotonic reading is left alone. Nothing of jobwatch's own code changes:
// the path under test is the one users run.

// stepEnv names the step file of a binary built by buildSteppedBinary.
const stepEnv = "JOBWATCH_TEST_CLOCK_STEP_FILE"

// stepSource is added to package time: testStepped moves a wall reading
// by the offset a goroutine reads from the step file every 100 ms (time.Now
// is called where no system call may be made: the runtime's timers).
const stepSource = `package time

import (
	"sync/atomic"
	"syscall"
)

var testStepOffset atomic.Int64

func init() {
	path, _ := syscall.Getenv("` + stepEnv + `")
	if path == "" {
		return
	}
	testStepOffset.Store(testStepFile(path))
	go func() {
		for {
			Sleep(100 * Millisecond)
			testStepOffset.Store(testStepFile(path))
		}
	}()
}

// testStepped moves the wall reading sec, nsec by the step file's offset.
func testStepped(sec int64, nsec int32, mono int64) (int64, int32) {
	off := testStepOffset.Load()
	if off == 0 {
		return sec, nsec
	}
	ns := sec*1e9 + int64(nsec) + off
	return ns / 1e9, int32(ns % 1e9)
}

func testStepFile(path string) int64 {
	fd, err := open(path)
	if err != nil {
		return testStepOffset.Load()
	}
	defer closefd(fd)
	var buf [32]byte
	n, _ := read(fd, buf[:])
	var v int64
	neg := false
	for i, c := range buf[:n] {
		switch {
		case i == 0 && c == '-':
			neg = true
		case c >= '0' && c <= '9':
			v = v*10 + int64(c-'0')
		default:
			return testStepOffset.Load()
		}
	}
	if neg {
		v = -v
	}
	return v
}
`

var (
	steppedOnce sync.Once
	steppedBin  string
	steppedErr  error
)

// buildSteppedBinary builds jobwatch with the time package overlaid (see
// above), once for the package's tests.
func buildSteppedBinary(t *testing.T) string {
	t.Helper()
	skipShortBinary(t)
	steppedOnce.Do(func() {
		dir := filepath.Join(binDir, "stepped")
		if steppedErr = os.MkdirAll(dir, 0o755); steppedErr != nil {
			return
		}
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			steppedErr = fmt.Errorf("go env GOROOT: %w", err)
			return
		}
		src := filepath.Join(strings.TrimSpace(string(goroot)), "src", "time")
		orig, err := os.ReadFile(filepath.Join(src, "time.go"))
		if err != nil {
			steppedErr = err
			return
		}
		const at = "\tsec, nsec, mono := runtimeNow()\n"
		if strings.Count(string(orig), at) != 1 {
			steppedErr = fmt.Errorf("time.Now in %s does not read %q: the overlay needs updating", src, at)
			return
		}
		patched := strings.Replace(string(orig), at, at+"\tsec, nsec = testStepped(sec, nsec, mono)\n", 1)
		files := map[string]string{filepath.Join(dir, "time.go"): patched, filepath.Join(dir, "teststep.go"): stepSource}
		for path, text := range files {
			if steppedErr = os.WriteFile(path, []byte(text), 0o644); steppedErr != nil {
				return
			}
		}
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {
			filepath.Join(src, "time.go"):                 filepath.Join(dir, "time.go"),
			filepath.Join(src, "zz_jobwatch_teststep.go"): filepath.Join(dir, "teststep.go"),
		}})
		if steppedErr = os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); steppedErr != nil {
			return
		}
		bin := filepath.Join(dir, "jobwatch")
		out, err := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "github.com/jobwatch/jobwatch/cmd/jobwatch").CombinedOutput()
		if err != nil {
			steppedErr = fmt.Errorf("go build -overlay: %v\n%s", err, out)
			return
		}
		steppedBin = bin
	})
	if steppedErr != nil {
		t.Fatal(steppedErr)
	}
	return steppedBin
}

// wallStep is the step file of one jobwatch: the offset of its wall clock.
type wallStep struct {
	t      *testing.T
	path   string
	offset time.Duration
}

func newWallStep(t *testing.T) *wallStep {
	s := &wallStep{t: t, path: filepath.Join(t.TempDir(), "step")}
	s.set(0)
	return s
}

// set writes the offset, in one rename.
func (s *wallStep) set(d time.Duration) {
	s.t.Helper()
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(int64(d), 10)), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		s.t.Fatal(err)
	}
	s.offset = d
}

// now is the stepped wall clock, as the host's jobs read it.
func (s *wallStep) now() time.Time { return time.Now().Add(s.offset) }

// steppedJobwatch is the stepped jobwatch with its step file: a script
// that execs it with the variable set (the test's own environment is left
// alone, as it runs beside others), its config and state directory.
type steppedJobwatch struct {
	script, config, state string
}

func newSteppedJobwatch(t *testing.T, step *wallStep, config string) steppedJobwatch {
	t.Helper()
	bin := buildSteppedBinary(t)
	dir := t.TempDir()
	j := steppedJobwatch{script: filepath.Join(dir, "jobwatch"), config: filepath.Join(dir, "jobwatch.yml"), state: filepath.Join(dir, "state")}
	testproc.WriteFile(t, j.config, config)
	testproc.WriteFile(t, j.script, fmt.Sprintf("#!/bin/sh\nexec env %s=%q %q \"$@\"\n", stepEnv, step.path, bin))
	if err := os.Chmod(j.script, 0o755); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j steppedJobwatch) start(t *testing.T) *instance {
	t.Helper()
	return startJobwatch(t, j.script, j.config, j.state, freePort(t))
}

// hostRun is a run's two records as a job of this host writes them, by
// the stepped clock.
func hostRun(host, job string, pid int, at time.Time) []string {
	return []string{
		fmt.Sprintf(`{"time":%q,"job":%q,"event":"start","host":%q,"pid":%d}`, at.UTC().Format(time.RFC3339Nano), job, host, pid),
		fmt.Sprintf(`{"time":%q,"job":%q,"event":"end","host":%q,"pid":%d,"status":"success","exit_code":0}`, at.Add(100*time.Millisecond).UTC().Format(time.RFC3339Nano), job, host, pid),
	}
}

// TestClockStepBackBinary: this host's clock steps back 120 s while a job
// runs every 5 s: it is never stale, its seconds since the last success
// stay under 15 s, no run is lost, failed or late, every run a success; a
// job that stopped at the step is stale within 40 s of it; the step is
// counted.
func TestClockStepBackBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real time")
	}
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	step := newWallStep(t)
	logPath := filepath.Join(t.TempDir(), "runs.log")
	in := newSteppedJobwatch(t, step, fmt.Sprintf(`jobs:
  - name: going
    every: 5s
    timeout: 4s
  - name: stopped
    every: 5s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath)).start(t)
	log := runLog{t, logPath}
	pid := 1000
	run := func(job string) {
		pid++
		log.append(hostRun(host, job, pid, step.now())...)
	}
	const going, stopped = `job_name="going"`, `job_name="stopped"`
	runs, tick := 0, time.NewTicker(5*time.Second) // paces the job's runs, as its schedule does
	defer tick.Stop()
	run("going")
	run("stopped")
	runs++
	in.waitFor(10*time.Second, map[string]float64{`jobwatch_job_runs_total{` + going + `,result="success"}`: 1, `jobwatch_job_runs_total{` + stopped + `,result="success"}`: 1})
	<-tick.C
	run("going")
	runs++
	step.set(-120 * time.Second)
	stepped := time.Now()
	var staleAfter time.Duration
	for time.Since(stepped) < 45*time.Second {
		select {
		case <-tick.C:
			run("going")
			runs++
		case <-time.After(500 * time.Millisecond): // scrapes twice a second
		}
		samples, _ := in.scrape()
		if v := samples[`jobwatch_job_seconds_since_last_success{`+going+`}`]; v >= 15 || samples[`jobwatch_job_stale{`+going+`}`] != 0 {
			t.Fatalf("%s after the step: seconds since the last success %v, stale %v", time.Since(stepped).Round(time.Second), v, samples[`jobwatch_job_stale{`+going+`}`])
		}
		for _, res := range []string{"lost", "failure", "timeout"} {
			if v := samples[`jobwatch_job_runs_total{`+going+`,result="`+res+`"}`]; v != 0 {
				t.Fatalf("%s after the step: %v runs %s", time.Since(stepped).Round(time.Second), v, res)
			}
		}
		if staleAfter == 0 && samples[`jobwatch_job_stale{`+stopped+`}`] == 1 {
			staleAfter = time.Since(stepped)
		}
	}
	if staleAfter == 0 || staleAfter > 40*time.Second {
		t.Errorf("the job that stopped at the step: stale after %s, want within 40s (0: never)", staleAfter)
	}
	got := in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_runs_total{` + going + `,result="success"}`: float64(runs),
		`jobwatch_job_running{` + going + `}`:                     0,
		`jobwatch_clock_steps_total{direction="backward"}`:        1,
		`jobwatch_source_late_records_total{source="runs"}`:       0,
	})
	t.Logf("%d runs, the stopped job stale %s after the step; forward steps %v", runs, staleAfter.Round(time.Second), got[`jobwatch_clock_steps_total{direction="forward"}`])
}

// TestHostAheadBinary: a host whose clock is 240 s ahead writes its runs
// into the same run log as a healthy job that runs every 10 s on its
// calendar: the healthy job counts no missed run, the skew shows for that
// host only.
func TestHostAheadBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("40 s of real time")
	}
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: healthy
    on_calendar: "*:*:0/10"
    timezone: UTC
    grace: 5s
  - name: ahead
    on_calendar: "*:*:0/10"
    timezone: UTC
    grace: 5s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	log := runLog{t, logPath}
	pid := 0
	run := func(job, host string, at time.Time) []string {
		pid++
		return []string{
			fmt.Sprintf(`{"time":%q,"job":%q,"event":"start","host":%q,"pid":%d}`, at.UTC().Format(time.RFC3339Nano), job, host, pid),
			fmt.Sprintf(`{"time":%q,"job":%q,"event":"end","host":%q,"pid":%d,"status":"success","exit_code":0}`, at.Add(500*time.Millisecond).UTC().Format(time.RFC3339Nano), job, host, pid),
		}
	}
	// Each slot's runs a second after it, as the calendar starts them.
	next := time.Now().Truncate(10 * time.Second).Add(11 * time.Second)
	slots := 0
	for slots < 4 {
		timer := time.NewTimer(time.Until(next)) // paces the runs, as the calendar does
		<-timer.C
		log.append(append(run("healthy", "web1", time.Now()), run("ahead", "fast", time.Now().Add(240*time.Second))...)...)
		slots++
		next = next.Add(10 * time.Second)
	}
	// The last slot decided: its grace and the late window past.
	last := next.Add(-11 * time.Second)
	in.waitFor(10*time.Second, map[string]float64{`jobwatch_job_runs_total{job_name="healthy",result="success"}`: float64(slots)})
	testproc.WaitUntil(t, minWait, "the healthy job's decisions past its last slot's grace", func() bool {
		samples, _ := in.scrape()
		behind, ok := samples[`jobwatch_source_decisions_behind_seconds{source="runs"}`]
		return time.Now().After(last.Add(8*time.Second)) && ok && behind < 3
	})
	samples, body := in.scrape()
	if v := samples[`jobwatch_job_missed_runs_total{job_name="healthy"}`]; v != 0 {
		t.Errorf("the healthy job beside a host 240 s ahead: %v missed runs, want 0", v)
	}
	if v := samples[`jobwatch_host_clock_skew_seconds{host="fast"}`]; v < 230 || v > 241 {
		t.Errorf("the skew of fast: %v, want about 240", v)
	}
	if n := strings.Count(body, "\njobwatch_host_clock_skew_seconds{"); n != 1 {
		t.Errorf("%d hosts with a skew, want fast's only:\n%s", n, body)
	}
}

// TestRunTimeoutBinary: timeout: 2s in jobwatch.yml and jobwatch run
// --timeout 2s (the natural configuration): the wrapper's end comes just
// after jobwatch's timeout, and the run counts as a timeout, not lost.
func TestRunTimeoutBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: slow
    every: 1h
    timeout: 2s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	if c := jobwatchRun(t, bin, "--job", "slow", "--log", logPath, "--timeout", "2s", "--", "sleep", "30"); c != 124 {
		t.Fatalf("jobwatch run: exit %d, want 124", c)
	}
	// Decided once the late window and TimeoutMargin have passed too.
	in.waitFor(25*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="slow",result="timeout"}`: 1,
		`jobwatch_job_runs_total{job_name="slow",result="lost"}`:    noSeries,
		`jobwatch_job_running{job_name="slow"}`:                     0,
	})
}

// TestUncheckedRunBinary: a run without host or PID (an application's own
// log) of a job every 4 s is in progress for three periods and more, and
// its end then counts as a success: not lost.
func TestUncheckedRunBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("15 s of real time")
	}
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: app
    every: 4s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	log := runLog{t, logPath}
	started := time.Now()
	log.append(fmt.Sprintf(`{"time":%q,"job":"app","event":"start","run_id":"r1"}`, started.UTC().Format(time.RFC3339Nano)))
	in.waitFor(5*time.Second, map[string]float64{`jobwatch_job_running{job_name="app"}`: 1})
	// Three periods, and then some: in progress all along. (A window in
	// which the run must not be closed.)
	for time.Since(started) < 14*time.Second {
		samples, _ := in.scrape()
		if samples[`jobwatch_job_running{job_name="app"}`] != 1 || samples[`jobwatch_job_runs_total{job_name="app",result="lost"}`] != 0 {
			t.Fatalf("%s after its start: running %v, lost %v; want 1 and 0", time.Since(started).Round(time.Second),
				samples[`jobwatch_job_running{job_name="app"}`], samples[`jobwatch_job_runs_total{job_name="app",result="lost"}`])
		}
		time.Sleep(500 * time.Millisecond) // paces the scrapes
	}
	log.append(fmt.Sprintf(`{"time":%q,"job":"app","event":"end","run_id":"r1","status":"success","exit_code":0}`, time.Now().UTC().Format(time.RFC3339Nano)))
	in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="app",result="success"}`: 1,
		`jobwatch_job_runs_total{job_name="app",result="lost"}`:    noSeries,
		`jobwatch_job_running{job_name="app"}`:                     0,
	})
}

// TestReplayedBacklogBinary: a run log of 20,000 runs dated four days ago
// (a job every 10 s whose runs take 45 s, an application's log: no host,
// no PID), read at start with the default start-up hold: every run counted
// with its result, none lost (the runs open when the hold ended were lost
// before, their ends read milliseconds later not counted).
func TestReplayedBacklogBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	const runs = 20_000
	base := time.Now().Add(-96 * time.Hour).UTC()
	// Written in time order, as the application wrote it: each run's end
	// after the starts of the four runs after it.
	type line struct {
		at   time.Time
		text string
	}
	lines := make([]line, 0, 2*runs)
	for i := range runs {
		at := base.Add(time.Duration(i) * 10 * time.Second)
		status := "success"
		if i%10 == 3 {
			status = "failure"
		}
		lines = append(lines,
			line{at, fmt.Sprintf(`{"time":%q,"job":"app","event":"start","run_id":"r%d"}`, at.Format(time.RFC3339Nano), i)},
			line{at.Add(45 * time.Second), fmt.Sprintf(`{"time":%q,"job":"app","event":"end","run_id":"r%d","status":%q,"duration_seconds":45}`, at.Add(45*time.Second).Format(time.RFC3339Nano), i, status)})
	}
	slices.SortStableFunc(lines, func(x, y line) int { return x.at.Compare(y.at) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	testproc.WriteFile(t, logPath, b.String())
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: app
    every: 10s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath))
	in := startJobwatchArgs(t, bin, cfg, filepath.Join(dir, "state"), freePort(t), "--sources.startup-hold=10s")
	in.waitFor(60*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="app",result="success"}`: runs - runs/10,
		`jobwatch_job_runs_total{job_name="app",result="failure"}`: runs / 10,
		`jobwatch_job_runs_total{job_name="app",result="lost"}`:    noSeries,
		`jobwatch_job_running{job_name="app"}`:                     0,
	})
}

// TestClockStepBackRestartBinary: jobwatch stopped and started again after
// a step back of its host's clock, the wall clock still behind: its clock
// is not behind the one it saved with (the model's, not the stepped wall
// clock), the difference is taken for a step back, and the job's records
// written after the restart are its present: none late, the last success
// moving on.
func TestClockStepBackRestartBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("two jobwatch starts")
	}
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	step := newWallStep(t)
	logPath := filepath.Join(t.TempDir(), "runs.log")
	jw := newSteppedJobwatch(t, step, fmt.Sprintf(`jobs:
  - name: going
    every: 5s
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`, logPath))
	log := runLog{t, logPath}
	const going = `job_name="going"`
	in := jw.start(t)
	log.append(hostRun(host, "going", 1, step.now())...)
	in.waitFor(10*time.Second, map[string]float64{`jobwatch_job_runs_total{` + going + `,result="success"}`: 1})
	step.set(-120 * time.Second)
	// A scrape reads the model's clock: the step is seen within the 100 ms
	// the binary takes to read its step file.
	in.waitFor(5*time.Second, map[string]float64{`jobwatch_clock_steps_total{direction="backward"}`: 1})
	log.append(hostRun(host, "going", 2, step.now())...)
	before := in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_runs_total{` + going + `,result="success"}`: 2,
		`jobwatch_source_late_records_total{source="runs"}`:       0,
	})
	prevExact := lastSuccessOf(t, in, "going")
	in.kill(syscall.SIGTERM)

	in = jw.start(t) // the wall clock still 120 s behind
	log.append(hostRun(host, "going", 3, step.now())...)
	got := in.waitFor(10*time.Second, map[string]float64{
		`jobwatch_job_runs_total{` + going + `,result="success"}`: 3,
		`jobwatch_clock_steps_total{direction="backward"}`:        1,
		`jobwatch_source_late_records_total{source="runs"}`:       0,
	})
	last, prev := got[`jobwatch_job_last_success_timestamp_seconds{`+going+`}`], before[`jobwatch_job_last_success_timestamp_seconds{`+going+`}`]
	// In whole seconds (docs/metrics.md) the runs, carried past the step
	// on the time line before it, may end within one second: the JSON
	// API's exact times move on.
	if last < prev {
		t.Errorf("last success %v after the restart, before %v before it", last, prev)
	}
	if exact := lastSuccessOf(t, in, "going"); !exact.After(prevExact) {
		t.Errorf("last success %v after the restart, not after %v before it", exact, prevExact)
	}
	if v := got[`jobwatch_job_seconds_since_last_success{`+going+`}`]; v >= 15 {
		t.Errorf("seconds since the last success %v after the restart", v)
	}
}

// lastSuccessOf is the job's last success as the JSON API says it, in
// full precision.
func lastSuccessOf(t *testing.T, in *instance, job string) time.Time {
	t.Helper()
	var j struct {
		LastSuccess time.Time `json:"last_success"`
	}
	getJSON(t, "http://"+in.addr+"/api/v1/jobs/"+job, &j)
	return j.LastSuccess
}
