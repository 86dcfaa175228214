package main

// Pauses, maintenance windows and jobwatch's own downtime through the real
// binary (docs/ownership.md, "Pauses and maintenance").

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/status"
)

const pauseConfig = `
jobs:
  - name: backup
    every: 1h
  - name: report
    every: 1h
checkins:
  enabled: true
`

// cli runs a command of the binary and returns its exit code and output.
func cli(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// pausedJSON is `jobwatch status --format json --job job`'s pause.
func pausedJSON(t *testing.T, bin, base, job string) *status.Paused {
	t.Helper()
	code, out := cli(t, bin, "status", "--format", "json", "--job", job, "--url", base)
	if code != 0 {
		t.Fatalf("jobwatch status: %d %s", code, out)
	}
	var rep status.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Jobs) != 1 {
		t.Fatalf("jobwatch status: %v\n%s", err, out)
	}
	return rep.Jobs[0].Paused
}

// jobwatch pause and resume: refused, naming the flag, without
// --web.enable-admin-api; with it, a pause shows on /metrics and in
// jobwatch status, survives a restart, and ends with jobwatch resume. The
// API refuses a cross-site request.
func TestPauseThroughBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, pauseConfig)
	state := filepath.Join(dir, "state")

	off := startJobwatch(t, bin, cfg, state, freePort(t))
	base := "http://" + off.addr
	if code, out := cli(t, bin, "pause", "--job", "backup", "--url", base); code != 1 || !strings.Contains(out, "--web.enable-admin-api") {
		t.Fatalf("pause without the flag: %d %q, want 1 naming the flag", code, out)
	}
	off.kill(syscall.SIGTERM)

	addr := freePort(t)
	in := startJobwatchArgs(t, bin, cfg, state, addr, "--sources.startup-hold=0s", "--web.enable-admin-api")
	base = "http://" + addr
	code, out := cli(t, bin, "pause", "--job", "backup", "--until", "2h", "--reason", "db upgrade", "--url", base)
	if code != 0 || !strings.Contains(out, "backup paused since") {
		t.Fatalf("pause: %d %q", code, out)
	}
	if code, out := cli(t, bin, "pause", "--job", "nosuch", "--url", base); code != 1 || !strings.Contains(out, `no such job: "nosuch"`) {
		t.Errorf("pause of an unknown job: %d %q", code, out)
	}
	if code, out := cli(t, bin, "pause", "--job", "backup", "--until", "soon", "--url", base); code != 2 || !strings.Contains(out, "want healthy") {
		t.Errorf("pause --until soon: %d %q", code, out)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/jobs/report/pause", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site pause: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	in.waitFor(minWait, map[string]float64{
		`jobwatch_job_paused{job_name="backup"}`: 1,
		`jobwatch_job_paused{job_name="report"}`: noSeries, // never paused, no window
	})
	if p := pausedJSON(t, bin, base, "backup"); p == nil || p.Why != "paused" || p.Reason != "db upgrade" || p.Until == nil {
		t.Fatalf("jobwatch status says %+v", p)
	}
	if !strings.Contains(in.logs.String(), "admin API: job paused") {
		t.Error("the pause is not in the log")
	}

	// A restart keeps the pause.
	in.kill(syscall.SIGTERM)
	in = startJobwatchArgs(t, bin, cfg, state, addr, "--sources.startup-hold=0s", "--web.enable-admin-api")
	in.waitFor(minWait, map[string]float64{`jobwatch_job_paused{job_name="backup"}`: 1})
	if p := pausedJSON(t, bin, base, "backup"); p == nil || p.Reason != "db upgrade" {
		t.Fatalf("after a restart, jobwatch status says %+v", p)
	}

	if code, out := cli(t, bin, "resume", "--job", "backup", "--url", base); code != 0 || !strings.Contains(out, "backup resumed") {
		t.Fatalf("resume: %d %q", code, out)
	}
	in.waitFor(minWait, map[string]float64{`jobwatch_job_paused{job_name="backup"}`: 0})
	if code, out := cli(t, bin, "resume", "--job", "backup", "--url", base); code != 1 || !strings.Contains(out, "not paused") {
		t.Errorf("a second resume: %d %q", code, out)
	}
}

// A job due every second that never runs, in a maintenance window from
// the config that is always open: its expected runs are unjudged, none
// missed, and it is paused and not stale; the same job without the window
// misses its runs.
func TestMaintenanceWindowThroughBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
jobs:
  - name: guarded
    on_calendar: "*:*:*"
    grace: 1s
    maintenance:
      # A window opening every minute for a minute: always open.
      - {schedule: "* * * * *", duration: 1m}
  - name: open
    on_calendar: "*:*:*"
    grace: 1s
checkins:
  enabled: true
`)
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	var got map[string]float64
	testproc.EventuallyEvery(t, minWait, 200*time.Millisecond, "3 unjudged and 3 missed runs", func() error {
		got, _ = in.scrape()
		if u, m := got[`jobwatch_job_unjudged_runs_total{job_name="guarded",reason="maintenance"}`], got[`jobwatch_job_missed_runs_total{job_name="open"}`]; u < 3 || m < 3 {
			return fmt.Errorf("unjudged %v, missed %v", u, m)
		}
		return nil
	})
	for k, want := range map[string]float64{
		`jobwatch_job_missed_runs_total{job_name="guarded"}`:       0,
		`jobwatch_job_consecutive_missed_runs{job_name="guarded"}`: 0,
		`jobwatch_job_paused{job_name="guarded"}`:                  1,
		`jobwatch_job_stale{job_name="guarded"}`:                   0,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if v, ok := got[`jobwatch_job_paused{job_name="open"}`]; ok {
		t.Errorf("a job without a window, never paused, has jobwatch_job_paused %v", v)
	}
}

// A check-in job due every 5 s, pinged every second, while jobwatch is
// stopped for 15 s: the expected runs of the gap are unknown, not missed.
func TestCheckinGapIsUnknown(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
jobs:
  - name: heartbeat
    on_calendar: "*:*:0/5"
    grace: 3s
checkins:
  enabled: true
`)
	state := filepath.Join(dir, "state")
	addr := freePort(t)
	in := startJobwatch(t, bin, cfg, state, addr)

	// The pinger checks a run in every second, its start and its end (an
	// end alone fills no expected run), and says whether both were taken.
	pings := make(chan bool)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		client := &http.Client{Timeout: 2 * time.Second}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ok := true
			rid := newRID(t)
			for _, path := range []string{"/ping/heartbeat/start?rid=" + rid, "/ping/heartbeat?rid=" + rid} {
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					ok = false
					continue
				}
				ok = ok && resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
			select {
			case pings <- ok:
			case <-stop:
				return
			}
		}
	}()
	// await waits for n check-ins taken (taken) or refused.
	await := func(n int, taken bool) {
		t.Helper()
		for seen := 0; seen < n; {
			ok := testproc.Receive(t, pings, time.Minute, "a ping")
			if ok == taken {
				seen++
			}
		}
	}
	await(6, true)
	in.waitFor(minWait, map[string]float64{`jobwatch_job_missed_runs_total{job_name="heartbeat"}`: 0})

	in.kill(syscall.SIGTERM)
	await(15, false) // 15 s of pings nobody received
	in = startJobwatch(t, bin, cfg, state, addr)
	await(12, true) // two expected runs after the restart, and their grace

	var got map[string]float64
	testproc.EventuallyEvery(t, minWait, 200*time.Millisecond, "the gap's expected runs unknown", func() error {
		got, _ = in.scrape()
		if u := got[`jobwatch_job_unjudged_runs_total{job_name="heartbeat",reason="unknown"}`]; u < 2 {
			return fmt.Errorf("%v unknown", u)
		}
		return nil
	})
	if m := got[`jobwatch_job_missed_runs_total{job_name="heartbeat"}`]; m != 0 {
		t.Errorf("%v missed runs, want none: the gap's are unknown", m)
		_, body := in.scrape()
		for line := range strings.Lines(body) {
			if strings.Contains(line, "heartbeat") {
				t.Log(strings.TrimSpace(line))
			}
		}
		_, out := cli(t, bin, "status", "--format", "json", "--url", "http://"+addr)
		t.Log(out)
	}
}
