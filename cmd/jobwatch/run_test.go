package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// jobwatchRun runs `jobwatch run ARGS...` to the end and returns its exit code.
func jobwatchRun(t *testing.T, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"run"}, args...)...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("jobwatch run: %v", err)
	}
	t.Logf("jobwatch run %q: exit %d %s", args, cmd.ProcessState.ExitCode(), out)
	return cmd.ProcessState.ExitCode()
}

// TestRunRecordsExported runs jobwatch run on real commands, then the
// exporter on the log it wrote: runs by result, skips, durations and the last
// success show on /metrics.
func TestRunRecordsExported(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	lock := filepath.Join(dir, "stats.lock")
	common := []string{"--job", "stats", "--log", logPath, "--lock", lock}

	if c := jobwatchRun(t, bin, append(common, "--", "sleep", "0.3")...); c != 0 {
		t.Fatalf("exit %d", c)
	}
	if c := jobwatchRun(t, bin, append(common, "--", "sh", "-c", "exit 3")...); c != 3 {
		t.Fatalf("exit %d", c)
	}
	// A long run holds the lock until a run started meanwhile has skipped.
	long := exec.Command(bin, append([]string{"run"}, append(common, "--timeout", "60s", "--", "sh", "-c",
		`sleep 0.5; until grep -q '"skip"' "$1"; do sleep 0.05; done`, "sh", logPath)...)...)
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { long.Process.Kill(); long.Wait() })
	// Two runs of two records each before it: its start is the fifth.
	testproc.WaitUntil(t, minWait, "the start record of the long run", func() bool { return len(readLog(t, logPath)) >= 5 })
	if c := jobwatchRun(t, bin, append(common, "--skip-exit-code", "75", "--", "true")...); c != 75 {
		t.Fatalf("exit %d, want 75 (skipped)", c)
	}
	if err := long.Wait(); err != nil {
		t.Fatalf("long run: %v", err)
	}
	if c := jobwatchRun(t, bin, append(common, "--timeout", "200ms", "--kill-after", "1s", "--", "sleep", "10")...); c != 124 {
		t.Fatalf("exit %d, want 124", c)
	}
	// Two runs that declined to run: skips, not runs; the last exit code,
	// the durations and the last success stay the runs'.
	if c := jobwatchRun(t, bin, append(common, "--skipped-exit", "75", "--skipped-reason", "locked", "--", "sh", "-c", "exit 75")...); c != 0 {
		t.Fatalf("exit %d, want 0 (declined)", c)
	}
	if c := jobwatchRun(t, bin, append(common, "--skipped-output", "^lock held", "--", "sh", "-c", "echo lock held")...); c != 0 {
		t.Fatalf("exit %d, want 0 (declined)", c)
	}

	recs := readLog(t, logPath)
	var lastSuccess float64
	var durations float64
	for _, r := range recs {
		if r["event"] == "end" && r["status"] != "skipped" {
			durations += r["duration_seconds"].(float64)
			if r["status"] == "success" {
				ts, _ := time.Parse(time.RFC3339Nano, r["time"].(string))
				lastSuccess = float64(ts.Unix()) // whole seconds, as /metrics writes times
			}
		}
	}

	cfg := filepath.Join(dir, "jobwatch.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "jobs:\n  - name: stats\n    every: 1h\nsources:\n  - name: runs\n    type: runlog\n    path: %s\n    format: json\n", logPath), 0o644); err != nil {
		t.Fatal(err)
	}
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	// The last records were written a moment ago: decided once the run
	// log's late window has passed them.
	got := in.waitFor(15*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 2,
		`jobwatch_job_runs_total{job_name="stats",result="failure"}`: 1,
		`jobwatch_job_runs_total{job_name="stats",result="timeout"}`: 1,
		`jobwatch_job_runs_total{job_name="stats",result="lost"}`:    noSeries,
		`jobwatch_job_skips_total{job_name="stats",reason="locked"}`: 2,
		`jobwatch_job_skips_total{job_name="stats",reason="other"}`:  1,
		`jobwatch_job_running{job_name="stats"}`:                     0,
		`jobwatch_job_last_exit_code{job_name="stats"}`:              124,
		`jobwatch_job_duration_seconds_count{job_name="stats"}`:      4,
		`jobwatch_source_parse_errors_total{source="runs"}`:          0,
		`jobwatch_source_records_total{source="runs"}`:               float64(len(recs)),
	})
	if v := got[`jobwatch_job_last_success_timestamp_seconds{job_name="stats"}`]; v != lastSuccess {
		t.Errorf("last success %v, want %v (the long run's end record)", v, lastSuccess)
	}
	if v := got[`jobwatch_job_duration_seconds_sum{job_name="stats"}`]; math.Abs(v-durations) > 0.01 || v < 0.3+0.5+0.2 {
		t.Errorf("duration sum %v, want %v (the end records' durations)", v, durations)
	}
	if v := got[`jobwatch_job_last_duration_seconds{job_name="stats"}`]; v < 0.2 || v > 2 {
		t.Errorf("last duration %v, want the timed-out run's, about 0.2s", v)
	}
}

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("run log line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// BenchmarkRunOverhead measures what jobwatch run adds to a command: wall
// time for `true` run directly and through the built binary, and the time
// from exec to the command's start (the command prints the clock; the same
// command run directly is the baseline).
//
//	go test -run XXX -bench RunOverhead -benchtime 200x ./cmd/jobwatch
func BenchmarkRunOverhead(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "jobwatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "runs.log")
	wrap := []string{bin, "run", "--job", "bench", "--log", logPath, "--"}
	wrapLock := []string{bin, "run", "--job", "bench", "--log", logPath, "--lock", filepath.Join(dir, "bench.lock"), "--timeout", "1m", "--"}
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"true/direct", []string{"true"}},
		{"true/wrapped", append(wrap, "true")},
		{"true/wrapped-lock-timeout", append(wrapLock, "true")},
		{"start/direct", []string{"date", "+%s%N"}},
		{"start/wrapped", append(wrap, "date", "+%s%N")},
		{"start/wrapped-lock-timeout", append(wrapLock, "date", "+%s%N")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var toStart time.Duration
			for b.Loop() {
				t0 := time.Now()
				out, err := exec.Command(bc.argv[0], bc.argv[1:]...).Output()
				if err != nil {
					b.Fatal(err)
				}
				if strings.HasPrefix(bc.name, "start/") {
					ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
					if err != nil {
						b.Fatal(err)
					}
					toStart += time.Unix(0, ns).Sub(t0)
				}
			}
			if toStart > 0 {
				b.ReportMetric(float64(toStart.Microseconds())/float64(b.N), "µs-to-start/op")
			}
		})
	}
}
