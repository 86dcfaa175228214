package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/alerts"
	"github.com/jobwatch/jobwatch/dashboards"
	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/internal/testsupport/promcheck"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// The hosts in the run-log records are not this machine, so jobwatch's
// reaper (which closes runs whose local process is gone) leaves them open.
const (
	hostA = "e2e-web1"
	hostB = "e2e-web2"
)

// TestAlertsEndToEnd runs jobwatch, Prometheus (scraping it every second,
// evaluating the bundled rules every second) and Alertmanager on loopback
// ports; makes one job stale and another overlap through run-log records;
// and checks that Alertmanager holds JobwatchJobStale and
// JobwatchJobOverlapping for those jobs, that every dashboard query runs
// without error against that Prometheus, and that every metric it scraped
// from jobwatch is one the rules and dashboard may use.
func TestAlertsEndToEnd(t *testing.T) {
	prometheus := need(t, "prometheus", "prometheus")
	alertmanager := need(t, "prometheus-alertmanager", "prometheus-alertmanager")
	dir := t.TempDir()
	bin := testproc.BuildJobwatch(t, dir)

	// jobwatch: a job that will go stale (period 2s, stale after 4s), one
	// that will overlap, and one that stays healthy.
	jwConfig, runLog := runLogConfig(t, dir, `stale_multiple: 2
labels: {team: e2e}
jobs:
  - name: e2e_stale
    every: 2s
  - name: e2e_overlap
    every: 1h
  - name: e2e_fresh
    every: 1h
`)
	jwAddr, _ := startJobwatch(t, bin, jwConfig, filepath.Join(dir, "state"))

	amAddr := startAlertmanager(t, alertmanager, dir)
	promAddr := startPrometheus(t, prometheus, dir, amAddr, fmt.Sprintf(`
  - job_name: jobwatch
    static_configs: [{targets: [%q]}]
`, jwAddr))

	// The run log: e2e_fresh succeeds now; e2e_stale succeeds once and
	// then never again; e2e_overlap starts twice on one host, and neither
	// run ends.
	now := time.Now().UTC()
	appendRecords(t, runLog,
		record(now.Add(-time.Second), "e2e_fresh", "start", hostA, 501, ""),
		record(now, "e2e_fresh", "end", hostA, 501, "success"),
		record(now.Add(-time.Second), "e2e_stale", "start", hostA, 601, ""),
		record(now, "e2e_stale", "end", hostA, 601, "success"),
		record(now.Add(-500*time.Millisecond), "e2e_overlap", "start", hostA, 701, ""),
	)
	appendRecords(t, runLog, record(now, "e2e_overlap", "start", hostA, 702, ""))

	// Both alerts reach Alertmanager, with the right job_name.
	want := map[string]string{"JobwatchJobStale": "e2e_stale", "JobwatchJobOverlapping": "e2e_overlap"}
	var got []amAlert
	testproc.Eventually(t, 40*time.Second, fmt.Sprintf("Alertmanager to get %v", want), func() error {
		if got = amAlerts(t, amAddr); !hasAll(got, want) {
			return fmt.Errorf("it has %s\njobwatch /metrics:\n%s", describe(got), jobwatchMetrics(t, jwAddr))
		}
		return nil
	})
	for _, a := range got {
		if a.Labels["alertname"] == "JobwatchJobStale" && a.Labels["job_name"] != "e2e_stale" {
			t.Errorf("JobwatchJobStale for %s, which is not stale", a.Labels["job_name"])
		}
		if a.Labels["alertname"] == "JobwatchJobOverlapping" && a.Labels["job_name"] != "e2e_overlap" {
			t.Errorf("JobwatchJobOverlapping for %s, which does not overlap", a.Labels["job_name"])
		}
		if a.Labels["job_name"] == "e2e_overlap" && a.Labels["alertname"] == "JobwatchJobOverlapping" {
			for _, pid := range []string{"701", "702"} {
				if !strings.Contains(a.Annotations["description"], hostA+"/"+pid) {
					t.Errorf("overlap description does not name run %s/%s: %q", hostA, pid, a.Annotations["description"])
				}
			}
		}
		for _, k := range []string{"severity"} {
			if a.Labels[k] == "" {
				t.Errorf("%s has no %s label", a.Labels["alertname"], k)
			}
		}
	}
	t.Logf("Alertmanager has: %s", describe(got))

	// Every dashboard query runs without error against this Prometheus.
	d, err := dashboards.Parse(dashboards.JSON)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{"cluster": ".*", "job": ".*", "instance": jwAddr, "job_name": ".*", "team": ".*", "owner": ".*", "user": ".*", "unit": ".*"}
	for k, v := range dashboards.Builtin {
		vals[k] = v
	}
	for _, q := range qs {
		expr, unknown := dashboards.Expand(q.Expr, vals)
		if len(unknown) > 0 {
			t.Errorf("%s: undefined variables %q", q.Where, unknown)
			continue
		}
		n, named, err := promQuery(promAddr, expr, q.Instant)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.Where, err, expr)
			continue
		}
		if named && q.Instant && strings.HasPrefix(q.Where, "panel ") {
			t.Errorf("%s: rows carry __name__, which keeps a table's queries from merging\n%s", q.Where, expr)
		}
		// status_page reads jobwatch_status_page_info, absent without
		// --web.external-url, which this jobwatch is not given.
		if strings.HasPrefix(q.Where, "variable ") && q.Where != "variable status_page" && n == 0 {
			t.Errorf("%s: %s selects nothing", q.Where, expr)
		}
	}

	// Every metric Prometheus scraped from jobwatch is one the rules and
	// the dashboard are checked against.
	allowed, err := promcheck.Allowed(exporterCollectors(t))
	if err != nil {
		t.Fatal(err)
	}
	names := scrapedNames(t, promAddr)
	if !names["jobwatch_job_stale"] || !names["jobwatch_job_run_start_timestamp_seconds"] {
		t.Errorf("Prometheus did not scrape jobwatch's job metrics: %v", names)
	}
	for n := range names {
		// OpenMetrics' _created sample of a counter, which Prometheus
		// without created-timestamp ingestion stores as a series.
		if c, ok := strings.CutSuffix(n, "_created"); ok && allowed[c+"_total"] {
			continue
		}
		if strings.HasPrefix(n, "jobwatch_") && !allowed[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] && !allowed[n] {
			t.Errorf("jobwatch exports %s, which the exporter's collectors do not describe", n)
		}
	}
}

// need is the path of cmd, an outside program the test starts; the test
// skips under -short and fails when cmd is missing (testproc.Program).
func need(t *testing.T, cmd, pkg string) string {
	t.Helper()
	return testproc.Program(t, cmd, pkg)
}

// startProcess starts a process that the test stops on cleanup (SIGTERM,
// then SIGKILL after 5s); its output is logged if the test failed. stop
// stops it that way earlier; it returns once the process has exited.
func startProcess(t *testing.T, name, path string, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(path, args...)
	out := &testproc.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			if _, ok := testproc.Within(done, 5*time.Second); !ok {
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return stop
}

// runLogConfig writes dir/jobwatch.yml, the jobs (YAML, ending in a
// newline) and a JSON run-log source, "runs", on dir/runs.log, which it
// makes empty: the config's path and the log's.
func runLogConfig(t *testing.T, dir, jobs string) (config, runLog string) {
	t.Helper()
	runLog = filepath.Join(dir, "runs.log")
	testproc.WriteFile(t, runLog, "")
	config = filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, config, jobs+fmt.Sprintf(`sources:
  - name: runs
    type: runlog
    path: %q
    format: json
`, runLog))
	return config, runLog
}

// startJobwatch starts jobwatch (bin) on config with its state in state
// and flags, waits until it is healthy and returns its address and its
// stop (startProcess). Its output, on failure, is named by the state's
// directory.
func startJobwatch(t *testing.T, bin, config, state string, flags ...string) (addr string, stop func()) {
	t.Helper()
	addr = testproc.FreeAddr(t)
	name := "jobwatch " + filepath.Base(state)
	stop = startProcess(t, name, bin, append([]string{"--config.file=" + config, "--state.path=" + state,
		"--web.listen-address=" + addr}, flags...)...)
	waitHTTP(t, name, "http://"+addr+"/-/healthy")
	return addr, stop
}

// startAlertmanager starts Alertmanager, with an example route on
// severity, and returns its address.
func startAlertmanager(t *testing.T, alertmanager, dir string) string {
	t.Helper()
	amAddr := testproc.FreeAddr(t)
	amConfig := filepath.Join(dir, "alertmanager.yml")
	testproc.WriteFile(t, amConfig, `route:
  receiver: default
  group_by: [alertname, job_name]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
receivers:
  - name: default
  - name: pager
`)
	startProcess(t, "alertmanager", alertmanager, "--config.file="+amConfig,
		"--storage.path="+filepath.Join(dir, "am"), "--web.listen-address="+amAddr,
		"--cluster.listen-address=", "--log.level=warn")
	waitHTTP(t, "alertmanager", "http://"+amAddr+"/-/ready")
	return amAddr
}

// startPrometheus starts Prometheus with the bundled rules, scraping and
// evaluating every second, sending to Alertmanager at amAddr, with the
// given scrape_configs entries (YAML list items indented by two), and
// returns its address. The rules' copy only shortens for: durations so a
// test takes seconds rather than minutes.
func startPrometheus(t *testing.T, prometheus, dir, amAddr, scrapeConfigs string, flags ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "jobwatch.rules.yml")
	testproc.WriteFile(t, rules, regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAllString(string(alerts.Rules), "$1 0s"))
	promAddr := testproc.FreeAddr(t)
	promConfig := filepath.Join(dir, "prometheus.yml")
	testproc.WriteFile(t, promConfig, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs: [{targets: [%q]}]
scrape_configs:%s`, rules, amAddr, scrapeConfigs))
	startProcess(t, "prometheus", prometheus, append([]string{"--config.file=" + promConfig,
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--web.listen-address=" + promAddr,
		"--log.level=warn"}, flags...)...)
	waitHTTP(t, "prometheus", "http://"+promAddr+"/-/ready")
	return promAddr
}

func waitHTTP(t *testing.T, name, u string) {
	t.Helper()
	testproc.Eventually(t, 20*time.Second, name+" ready at "+u, func() error {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
}

func record(at time.Time, job, event, host string, pid int, status string) string {
	r := map[string]any{"time": at.Format(time.RFC3339Nano), "job": job, "event": event, "host": host, "pid": pid}
	if status != "" {
		r["status"] = status
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func appendRecords(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func amAlerts(t *testing.T, addr string) []amAlert {
	t.Helper()
	body := get(t, "http://"+addr+"/api/v2/alerts?active=true&silenced=false&inhibited=false")
	var as []amAlert
	if err := json.Unmarshal(body, &as); err != nil {
		t.Fatalf("Alertmanager /api/v2/alerts: %v\n%s", err, body)
	}
	return as
}

func hasAll(got []amAlert, want map[string]string) bool {
	for name, job := range want {
		found := false
		for _, a := range got {
			if a.Labels["alertname"] == name && a.Labels["job_name"] == job {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func describe(as []amAlert) string {
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s{job_name=%q,severity=%q}", a.Labels["alertname"], a.Labels["job_name"], a.Labels["severity"]))
	}
	sort.Strings(s)
	return "[" + strings.Join(s, " ") + "]"
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jobwatchMetrics(t *testing.T, addr string) string {
	var keep []string
	for _, l := range strings.Split(string(get(t, "http://"+addr+"/metrics")), "\n") {
		if strings.HasPrefix(l, "jobwatch_") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// promQuery runs expr against Prometheus' HTTP API, instant or over the
// last minute, and returns how many series it gave and whether any of them
// kept its metric name.
func promQuery(addr, expr string, instant bool) (n int, named bool, err error) {
	v := url.Values{"query": {expr}}
	path := "/api/v1/query"
	if !instant {
		path = "/api/v1/query_range"
		now := time.Now()
		v.Set("start", fmt.Sprint(now.Add(-time.Minute).Unix()))
		v.Set("end", fmt.Sprint(now.Unix()))
		v.Set("step", "1")
	}
	resp, err := http.PostForm("http://"+addr+path, v)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
		Warnings []string `json:"warnings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, false, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return 0, false, fmt.Errorf("status %s: %s", r.Status, r.Error)
	}
	if len(r.Warnings) > 0 {
		return 0, false, fmt.Errorf("warnings: %q", r.Warnings)
	}
	for _, res := range r.Data.Result {
		if _, ok := res.Metric["__name__"]; ok {
			named = true
		}
	}
	return len(r.Data.Result), named, nil
}

// scrapedNames lists the metric names Prometheus holds from the jobwatch
// scrape job.
func scrapedNames(t *testing.T, addr string) map[string]bool {
	t.Helper()
	body := get(t, "http://"+addr+"/api/v1/label/__name__/values?match[]="+url.QueryEscape(`{job="jobwatch"}`))
	var r struct {
		Data []string `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("label values: %v\n%s", err, body)
	}
	names := map[string]bool{}
	for _, n := range r.Data {
		names[n] = true
	}
	return names
}

// exporterCollectors are the real exporter's collectors on a one-job
// config, whose metric names promcheck lists.
func exporterCollectors(t *testing.T) []prometheus.Collector {
	t.Helper()
	e, err := exporter.New(exporter.Options{ConfigFile: promcheck.ProbeConfig(t), StateDir: t.TempDir(), Host: "probe"})
	if err != nil {
		t.Fatalf("starting the exporter: %v", err)
	}
	return e.Collectors()
}
