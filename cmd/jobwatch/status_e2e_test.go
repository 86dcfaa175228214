package main

// The status page, `jobwatch status` and `jobwatch check` through the real
// binary (docs/status.md), on one running jobwatch fed by a run log and by
// check-ins: a job of every state. The page is loaded in headless Chromium.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

const statusConfig = `
labels: {team: platform}
jobs:
  - name: backup
    every: 1h
    timeout: 20m
  - name: cleanup
    every: 1h
    labels: {team: payments, owner: alice}
    alert_after: {missed_runs: 2}
  - name: fresh
    every: 1h
  - name: report
    every: 1h
  - name: stats
    every: 1h
    timeout: 25m
  - name: sync
    every: 24h
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
checkins:
  enabled: true
`

// failureOutput is what the failing run of backup printed; the page must
// show it as text.
const failureOutput = "rsync: write failed on \"/srv/backup/db.dump\": No space left on device (28)\n<script>alert(1)</script><img src=x onerror=alert(2)>\nrsync error: error in file IO (code 11)\n"

// statusFixture starts jobwatch with a job of every state:
//
//	backup   failing: 12 hourly runs creeping longer (one failed, one
//	         skipped), then a failure check-in with output
//	cleanup  stale: its last success 5 hours ago
//	fresh    never seen
//	report   ok: a success 20 minutes ago
//	stats    running: a start check-in from web1, pid 200
//	sync     failing twice in a row
func statusFixture(t *testing.T) *instance {
	t.Helper()
	bin := buildBinary(t)
	dir := t.TempDir()
	log := runLog{t, filepath.Join(dir, "runs.log")}
	cfg := writeConfig(t, dir, fmt.Sprintf(statusConfig, log.path))
	now := time.Now().Truncate(time.Second)
	end := func(start time.Time, job string, pid int, d time.Duration, status string, code int) []string {
		return []string{
			rec(start, job, "start", pid, ""),
			rec(start.Add(d), job, "end", pid, fmt.Sprintf(`"status":%q,"exit_code":%d,"duration_seconds":%.0f`, status, code, d.Seconds())),
		}
	}
	var lines []string
	for i := 12; i >= 1; i-- {
		start := now.Add(-time.Duration(i)*time.Hour - 30*time.Minute)
		switch i {
		case 5:
			lines = append(lines, rec(start, "backup", "skip", 1000+i, `"reason":"locked","holder_pid":999`))
		case 7:
			lines = append(lines, end(start, "backup", 1000+i, 9*time.Minute, "failure", 2)...)
		default:
			lines = append(lines, end(start, "backup", 1000+i, 4*time.Minute+time.Duration(12-i)*40*time.Second, "success", 0)...)
		}
	}
	lines = append(lines, end(now.Add(-5*time.Hour), "cleanup", 300, time.Second, "success", 0)...)
	lines = append(lines, end(now.Add(-20*time.Minute), "report", 400, time.Minute, "success", 0)...)
	lines = append(lines, end(now.Add(-50*time.Minute), "stats", 199, 4*time.Minute, "success", 0)...)
	lines = append(lines, end(now.Add(-10*time.Hour), "sync", 500, 3*time.Minute, "success", 0)...)
	lines = append(lines, end(now.Add(-5*time.Hour), "sync", 501, 2*time.Minute, "failure", 1)...)
	lines = append(lines, end(now.Add(-3*time.Hour), "sync", 502, 2*time.Minute, "failure", 1)...)
	log.append(lines...)

	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	base := "http://" + in.addr
	client := &http.Client{Timeout: time.Minute}
	mustPing(t, client, base+"/ping/stats/start?host=web1&pid=200", "")
	mustPing(t, client, base+"/ping/backup/fail?host=nas", failureOutput)
	in.waitFor(30*time.Second, map[string]float64{
		`jobwatch_source_records_total{source="runs"}`:                float64(len(lines)),
		`jobwatch_source_records_total{source="checkin"}`:             2,
		`jobwatch_job_runs_total{job_name="backup",result="failure"}`: 2,
		`jobwatch_job_running{job_name="stats"}`:                      1,
		// A verdict, made once the check-in's watermark has passed it
		// (its facts above show at once).
		`jobwatch_job_consecutive_failures{job_name="backup"}`: 1,
	})
	return in
}

// TestStatusThroughBinary: `jobwatch status` against the running jobwatch
// gives the golden table (ages normalised), and `jobwatch check` every exit
// code of the Nagios conventions.
func TestStatusThroughBinary(t *testing.T) {
	t.Parallel()
	in := statusFixture(t)
	bin := in.cmd.Path
	base := "http://" + in.addr

	t.Run("status table", func(t *testing.T) {
		out, err := exec.Command(bin, "status", "--url", base).CombinedOutput()
		if err != nil {
			t.Fatalf("jobwatch status: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte("\x1b[")) {
			t.Errorf("colour when not on a terminal:\n%s", out)
		}
		got := normaliseTable(t, string(out))
		golden := filepath.Join("testdata", "status-e2e.golden")
		if os.Getenv("JOBWATCH_UPDATE_GOLDEN") == "1" {
			must(t, os.MkdirAll("testdata", 0o755))
			must(t, os.WriteFile(golden, []byte(got), 0o644))
		}
		want, err := os.ReadFile(golden)
		must(t, err)
		if got != string(want) {
			t.Errorf("jobwatch status, normalised:\n%s\nwant (%s; JOBWATCH_UPDATE_GOLDEN=1 rewrites it):\n%s\nas printed:\n%s", got, golden, want, out)
		}
		// One job, and the API's document as JSON.
		out, err = exec.Command(bin, "status", "--url", base, "--job", "stats").CombinedOutput()
		if err != nil || strings.Count(string(out), "\n") != 2 || !regexp.MustCompile(`(?m)^stats +running .* web1:200 `).Match(out) {
			t.Errorf("jobwatch status --job stats: %v\n%s", err, out)
		}
		out, err = exec.Command(bin, "status", "--url", base, "--format", "json").Output()
		if err != nil || !bytes.Contains(out, []byte(`"state": "stale"`)) || !bytes.Contains(out, []byte(`"generated_at"`)) {
			t.Errorf("jobwatch status --format json: %v\n%s", err, out)
		}
		// --label: the jobs with the label, all of them with several.
		for _, tc := range []struct {
			labels []string
			jobs   string
		}{
			{[]string{"team=payments"}, "cleanup"},
			{[]string{"team=platform"}, "backup fresh report stats sync"},
			{[]string{"team=payments", "owner=bob"}, ""},
		} {
			args := []string{"status", "--url", base}
			for _, l := range tc.labels {
				args = append(args, "--label", l)
			}
			out, err := exec.Command(bin, args...).CombinedOutput()
			var jobs []string
			for _, line := range strings.Split(string(out), "\n")[1:] {
				if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
					jobs = append(jobs, f[0])
				}
			}
			slices.Sort(jobs)
			if err != nil || strings.Join(jobs, " ") != tc.jobs {
				t.Errorf("jobwatch status --label %v: %v, jobs %q, want %q\n%s", tc.labels, err, jobs, tc.jobs, out)
			}
		}
		out, err = exec.Command(bin, "status", "--url", base, "--label", "team").CombinedOutput()
		if exitCode(err) != 2 || !strings.Contains(string(out), "want NAME=VALUE") {
			t.Errorf("jobwatch status --label team: exit %d\n%s", exitCode(err), out)
		}
		out, err = exec.Command(bin, "status", "--url", base, "--job", "nosuch").CombinedOutput()
		if exitCode(err) != 1 || !strings.Contains(string(out), "unknown job") {
			t.Errorf("jobwatch status --job nosuch: exit %d\n%s", exitCode(err), out)
		}
	})

	// The jobs' labels and thresholds on /metrics, which promtool's
	// linter passes.
	t.Run("labels on metrics", func(t *testing.T) {
		_, body := in.scrape()
		for _, want := range []string{
			`jobwatch_job_labels_info{job_name="cleanup",owner="alice",team="payments"} 1`,
			`jobwatch_job_labels_info{job_name="sync",owner="",team="platform"} 1`,
			`jobwatch_job_alert_after_missed_runs{job_name="cleanup"} 2`,
		} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("/metrics has no %s", want)
			}
		}
		if strings.Contains(body, `jobwatch_job_alert_after_missed_runs{job_name="sync"}`) || strings.Contains(body, "jobwatch_job_alert_after_failures{") {
			t.Errorf("/metrics has a threshold no job sets")
		}
		promtool := exec.Command("promtool", "check", "metrics")
		promtool.Stdin = strings.NewReader(body)
		if out, err := promtool.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	t.Run("check exit codes", func(t *testing.T) {
		closed := freePort(t) // nothing listens there
		for _, tc := range []struct {
			args []string
			code int
			line string
		}{
			{[]string{"--job", "report"}, 0, `^JOBWATCH OK - report: ok \| 'seconds_since_success'=\d+s;;;; 'consecutive_failures'=0;;;; 'running'=0;;;;$`},
			{[]string{"--job", "stats"}, 0, `^JOBWATCH OK - stats: running \| .* 'running'=1;;;;$`},
			{[]string{"--job", "backup"}, 1, `^JOBWATCH WARNING - backup: the last run failed \| .*'consecutive_failures'=1;;;;`},
			{[]string{"--job", "fresh"}, 1, `^JOBWATCH WARNING - fresh: never seen`},
			{[]string{"--job", "report", "--warning-late=10m"}, 1, `^JOBWATCH WARNING - report: no success for \d+m\d\ds \| 'seconds_since_success'=\d+s;600;;;`},
			{[]string{"--job", "sync"}, 2, `^JOBWATCH CRITICAL - sync: failing: 2 runs in a row failed \|`},
			{[]string{"--job", "cleanup"}, 2, `^JOBWATCH CRITICAL - cleanup: stale: no success for 5h\d\dm \|`},
			{[]string{"--job", "report", "--warning-late=5m", "--critical-late=15m"}, 2, `^JOBWATCH CRITICAL - report: no success for .*;300;900;;`},
			{[]string{"--job", "nosuch"}, 3, `^JOBWATCH UNKNOWN - nosuch: unknown job "nosuch" \(not configured in the jobwatch at ` + regexp.QuoteMeta(base) + `\)$`},
			// The password of the URL is not printed.
			{[]string{"--job", "report", "--url", "http://nagios:hunter2@" + closed}, 3, `^JOBWATCH UNKNOWN - report: .*nagios:\*\*\*@.*connection refused$`},
		} {
			t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
				args := append([]string{"check"}, tc.args...)
				if !strings.Contains(strings.Join(tc.args, " "), "--url") {
					args = append(args, "--url", base)
				}
				out, err := exec.Command(bin, args...).Output()
				if code := exitCode(err); code != tc.code {
					t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
				}
				line := strings.TrimSuffix(string(out), "\n")
				if strings.Contains(line, "hunter2") {
					t.Errorf("the password is in the output: %q", line)
				}
				if strings.Contains(line, "\n") || !regexp.MustCompile(tc.line).MatchString(line) {
					t.Errorf("output %q, want one line matching %s", out, tc.line)
				}
			})
		}
	})
}

// durToken is a duration as the table prints it (durText).
var durToken = regexp.MustCompile(`\d+(ms|s|m\d\ds|h\d\dm|d\d\dh)`)

// normaliseTable replaces the ages (LAST SUCCESS, NEXT RUN and the runs in
// progress), which depend on when the test runs, by "AGE", and lays the
// table out again.
func normaliseTable(t *testing.T, out string) string {
	t.Helper()
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	sep := regexp.MustCompile(`  +`)
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := sep.Split(strings.TrimSpace(line), -1)
		if len(f) != 9 {
			t.Fatalf("line %d has %d columns, want 9: %q", i+1, len(f), line)
		}
		if i > 0 {
			for _, c := range []int{2, 3, 5} {
				f[c] = durToken.ReplaceAllString(f[c], "AGE")
			}
		}
		fmt.Fprintln(tw, strings.Join(f, "\t"))
	}
	must(t, tw.Flush())
	return b.String()
}

// findChromium returns the path of Chromium, or "" when it is not installed
// (scripts/test.sh installs it).
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium runs headless Chromium on url with the extra flags and returns
// its standard output.
func chromium(t *testing.T, browser, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return stdout.Bytes()
}

// TestStatusPageInBrowser loads the status page and a job's page in
// headless Chromium and checks the DOM it rendered (status/browser_test.go
// takes the screenshots of docs/status.md).
func TestStatusPageInBrowser(t *testing.T) {
	skipShortBinary(t)
	t.Parallel()
	browser := findChromium()
	if browser == "" {
		t.Fatal("chromium not found: install the Debian package chromium (scripts/test.sh does)")
	}
	in := statusFixture(t)
	base := "http://" + in.addr

	dom := string(chromium(t, browser, base+"/status", "--dump-dom"))
	for job, state := range map[string]string{"backup": "failing", "cleanup": "stale", "fresh": "never_seen", "report": "ok", "stats": "running", "sync": "failing"} {
		if !regexp.MustCompile(`<tr data-job="` + job + `" data-state="` + state + `"`).MatchString(dom) {
			t.Errorf("the rendered page has no row for %s with data-state=%q", job, state)
		}
	}
	for _, want := range []string{"web1", `<table id="sources">`, `data-source="checkin"`, `data-source="runs"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Errorf("the rendered page has a script element")
	}

	dom = string(chromium(t, browser, base+"/status/job/backup", "--dump-dom"))
	svg := regexp.MustCompile(`(?s)<svg[^>]*>.*?</svg>`).FindString(dom)
	if svg == "" {
		t.Fatalf("the job's page has no SVG timeline:\n%s", dom)
	}
	// A bar for each run with a duration (the run log's 10 successes and
	// its failure), a dot for the skip and for the failure check-in, which
	// came without a start; the period and the timeout lines.
	for _, tc := range []struct {
		re   string
		want int
	}{
		{`<rect class="run success"`, 10},
		{`<rect class="run failure"`, 1},
		{`<circle class="run skipped"`, 1},
		{`<circle class="run failure"`, 1},
		{`<line class="period"`, 1},
		{`<line class="timeout"`, 1},
	} {
		if n := strings.Count(svg, tc.re); n != tc.want {
			t.Errorf("the timeline has %d %s, want %d", n, tc.re, tc.want)
		}
	}
	pre := regexp.MustCompile(`(?s)<pre id="output">(.*?)</pre>`).FindStringSubmatch(dom)
	if pre == nil {
		t.Fatalf("the job's page does not show the last failure's output")
	}
	// The DOM serialises text with <, > and & escaped: the output is text,
	// not elements.
	for _, want := range []string{"No space left on device", "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(pre[1], want) {
			t.Errorf("the output lacks %q:\n%s", want, pre[1])
		}
	}
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") {
		t.Errorf("the failure's output became elements of the page")
	}

}
