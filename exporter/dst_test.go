package exporter

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestScheduleFiguresAcrossDST runs the exporter with a real run log of two
// daily 02:30 jobs in Europe/Berlin across the spring DST change of
// 2026-03-29, when 02:30 does not exist: cron runs the job at 03:00, a
// systemd timer not at all. The stale, missed, unexpected and duplicate
// figures must come out exactly.
func TestScheduleFiguresAcrossDST(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "jobwatch.yml"), `
jobs:
  - name: daily_cron
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    scope: cluster
  - name: daily_timer
    on_calendar: "*-*-* 02:30:00"
    timezone: Europe/Berlin
sources:
  - name: runs
    type: runlog
    path: runs.log
    format: json
`)
	var lines []string
	run := func(job, host string, pid int, start string, secs int, status string) {
		st, err := time.Parse(time.RFC3339, start)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines,
			fmt.Sprintf(`{"time":%q,"job":%q,"event":"start","host":%q,"pid":%d}`, start, job, host, pid),
			fmt.Sprintf(`{"time":%q,"job":%q,"event":"end","host":%q,"pid":%d,"status":%q}`, st.Add(time.Duration(secs)*time.Second).Format(time.RFC3339), job, host, pid, status))
	}
	startOnly := func(job, host string, pid int, start string) {
		lines = append(lines, fmt.Sprintf(`{"time":%q,"job":%q,"event":"start","host":%q,"pid":%d}`, start, job, host, pid))
	}
	// The cron job.
	startOnly("daily_cron", "a", 10, "2026-03-26T02:30:05+01:00")
	run("daily_cron", "a", 11, "2026-03-26T02:30:30+01:00", 5, "success") // while pid 10 runs: overlap
	lines = append(lines, `{"time":"2026-03-26T02:31:05+01:00","job":"daily_cron","event":"end","host":"a","pid":10,"status":"success"}`)
	run("daily_cron", "a", 12, "2026-03-27T02:30:02+01:00", 10, "success")
	run("daily_cron", "a", 13, "2026-03-27T02:30:40+01:00", 10, "success") // after it ended: double trigger
	// 2026-03-28: no run, missed.
	run("daily_cron", "a", 14, "2026-03-29T03:00:10+02:00", 10, "success") // cron's run after the DST jump: expected
	run("daily_cron", "a", 15, "2026-03-30T02:30:03+02:00", 7, "success")
	run("daily_cron", "b", 16, "2026-03-30T02:30:20+02:00", 7, "success") // cluster job on a second host
	run("daily_cron", "a", 17, "2026-03-31T14:00:00+02:00", 7, "failure") // none due: unexpected
	// 2026-03-31, 04-01 and 04-02 at 02:30: no run, missed by the clock.

	// The timer job: 02:30 on 2026-03-29 does not exist, and systemd does
	// not run it; that is neither missed nor a reason to be stale.
	for i, day := range []string{"2026-03-27T02:30:01+01:00", "2026-03-28T02:30:01+01:00", "2026-03-30T02:30:01+02:00",
		"2026-03-31T02:30:01+02:00", "2026-04-01T02:30:01+02:00", "2026-04-02T02:30:01+02:00"} {
		run("daily_timer", "a", 100+i, day, 30, "success")
	}
	writeFile(t, filepath.Join(dir, "runs.log"), strings.Join(lines, "\n")+"\n")

	clock := &testClock{now: time.Date(2026, 4, 2, 1, 0, 0, 0, time.UTC)} // 03:00 in Berlin
	e, err := New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state"),
		Now: clock.Now, Host: "jobwatch-test", SaveInterval: 10 * time.Millisecond, ReapInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitUntil(t, "every record", func() bool {
		_, srcs := e.Tracker().View()
		return srcs[0].Records == uint64(len(lines))
	})
	clock.Advance(11 * time.Second) // past the warm-up: missed slots are now counted by the clock
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collectors()...)
	unix := func(s string) int64 {
		t, _ := time.Parse(time.RFC3339, s)
		return t.Unix()
	}
	want := fmt.Sprintf(`
# HELP jobwatch_job_stale 1 when the job has gone longer than its stale multiple of periods without success.
# TYPE jobwatch_job_stale gauge
jobwatch_job_stale{job_name="daily_cron"} 1
jobwatch_job_stale{job_name="daily_timer"} 0
# HELP jobwatch_job_missed_runs_total Expected runs of the job for which no run started within grace.
# TYPE jobwatch_job_missed_runs_total counter
jobwatch_job_missed_runs_total{job_name="daily_cron"} 4
jobwatch_job_missed_runs_total{job_name="daily_timer"} 0
# HELP jobwatch_job_unexpected_runs_total Runs of the job that started when none was due.
# TYPE jobwatch_job_unexpected_runs_total counter
jobwatch_job_unexpected_runs_total{job_name="daily_cron"} 1
jobwatch_job_unexpected_runs_total{job_name="daily_timer"} 0
# HELP jobwatch_job_duplicate_runs_total Second and later runs of one expected run: overlap (same host, first still running), double_trigger (same host, after it ended), multi_host (another host, cluster-scope jobs).
# TYPE jobwatch_job_duplicate_runs_total counter
jobwatch_job_duplicate_runs_total{job_name="daily_cron",kind="double_trigger"} 1
jobwatch_job_duplicate_runs_total{job_name="daily_cron",kind="multi_host"} 1
jobwatch_job_duplicate_runs_total{job_name="daily_cron",kind="overlap"} 1
# HELP jobwatch_job_deadline_timestamp_seconds Time at which the job becomes stale unless it succeeds again.
# TYPE jobwatch_job_deadline_timestamp_seconds gauge
jobwatch_job_deadline_timestamp_seconds{job_name="daily_cron"} %d
jobwatch_job_deadline_timestamp_seconds{job_name="daily_timer"} %d
# HELP jobwatch_job_next_run_timestamp_seconds Next expected run of the job.
# TYPE jobwatch_job_next_run_timestamp_seconds gauge
jobwatch_job_next_run_timestamp_seconds{job_name="daily_cron"} %d
jobwatch_job_next_run_timestamp_seconds{job_name="daily_timer"} %d
# HELP jobwatch_job_period_seconds Expected period of the job: the interval between its last expected run and the next.
# TYPE jobwatch_job_period_seconds gauge
jobwatch_job_period_seconds{job_name="daily_cron"} 86400
jobwatch_job_period_seconds{job_name="daily_timer"} 86400
`,
		// Two expected runs after the last successful start (03-30 02:30:20), plus the 1m grace.
		unix("2026-04-01T02:31:00+02:00"), unix("2026-04-04T02:31:00+02:00"),
		unix("2026-04-03T02:30:00+02:00"), unix("2026-04-03T02:30:00+02:00"))
	waitUntil(t, "the clock's missed slots", func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), "jobwatch_job_missed_runs_total") == nil
	})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"jobwatch_job_stale", "jobwatch_job_missed_runs_total", "jobwatch_job_unexpected_runs_total",
		"jobwatch_job_duplicate_runs_total", "jobwatch_job_deadline_timestamp_seconds",
		"jobwatch_job_next_run_timestamp_seconds", "jobwatch_job_period_seconds"); err != nil {
		t.Fatal(err)
	}
	// The figures survive a restart: nothing counted again.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e2, err := New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state"),
		Now: clock.Now, Host: "jobwatch-test"})
	if err != nil {
		t.Fatal(err)
	}
	reg2 := prometheus.NewPedanticRegistry()
	reg2.MustRegister(e2.Collectors()...)
	if err := testutil.GatherAndCompare(reg2, strings.NewReader(want),
		"jobwatch_job_missed_runs_total", "jobwatch_job_unexpected_runs_total", "jobwatch_job_duplicate_runs_total"); err != nil {
		t.Fatal(err)
	}
}
