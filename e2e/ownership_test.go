package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestOwnershipAlerts: through a real Prometheus and Alertmanager with the
// bundled rules, a failing job with labels {team: payments, owner: alice}
// gives a JobwatchJobFailing alert with both labels, a job with only the
// file's default team gets that one, and a job with alert_after.failures: 3
// pages at its third failure, not its second.
func TestOwnershipAlerts(t *testing.T) {
	prometheus := need(t, "prometheus", "prometheus")
	alertmanager := need(t, "prometheus-alertmanager", "prometheus-alertmanager")
	dir := t.TempDir()
	bin := testproc.BuildJobwatch(t, dir)

	jwConfig, runLog := runLogConfig(t, dir, `labels: {team: platform}
jobs:
  - name: e2e_payments
    every: 1h
    labels: {team: payments, owner: alice}
  - name: e2e_report
    every: 1h
  - name: e2e_flaky
    every: 1h
    labels: {owner: bob}
    alert_after: {failures: 3}
`)
	jwAddr, _ := startJobwatch(t, bin, jwConfig, filepath.Join(dir, "state"))
	amAddr := startAlertmanager(t, alertmanager, dir)
	promAddr := startPrometheus(t, prometheus, dir, amAddr, fmt.Sprintf(`
  - job_name: jobwatch
    static_configs: [{targets: [%q]}]
`, jwAddr))

	// Two failures in a row of each job, in one write.
	now := time.Now().UTC().Add(-time.Minute)
	var lines []string
	fail := func(job string, pid int, at time.Time) {
		lines = append(lines, record(at, job, "start", hostA, pid, ""), record(at.Add(time.Second), job, "end", hostA, pid, "failure"))
	}
	for i, job := range []string{"e2e_payments", "e2e_report", "e2e_flaky"} {
		fail(job, 100+i, now)
		fail(job, 200+i, now.Add(5*time.Second))
	}
	appendRecords(t, runLog, lines...)

	payments := map[string]string{"alertname": "JobwatchJobFailing", "job_name": "e2e_payments", "team": "payments", "owner": "alice", "severity": "warning"}
	report := map[string]string{"alertname": "JobwatchJobFailing", "job_name": "e2e_report", "team": "platform"}
	waitAlerts(t, amAddr, jwAddr, payments, report)
	for _, a := range amAlerts(t, amAddr) {
		if a.Labels["job_name"] == "e2e_report" && a.Labels["owner"] != "" {
			t.Errorf("e2e_report's alert has owner %q; the job has none", a.Labels["owner"])
		}
	}
	// The rules judged e2e_flaky's two failures in the evaluation that
	// fired the others' alerts (one scrape held all three), and since.
	waitQuery(t, promAddr, `jobwatch_job_consecutive_failures{job_name="e2e_flaky"} == 2`, 1)
	if n, _, err := promQuery(promAddr, `count_over_time(ALERTS{alertname="JobwatchJobFailing",job_name="e2e_flaky"}[10m])`, true); err != nil || n != 0 {
		t.Errorf("e2e_flaky paged at its second failure with alert_after.failures: 3 (%d series, %v)", n, err)
	}

	// The third failure pages, with the file's team and the job's owner.
	appendRecords(t, runLog, record(now.Add(10*time.Second), "e2e_flaky", "start", hostA, 302, ""),
		record(now.Add(11*time.Second), "e2e_flaky", "end", hostA, 302, "failure"))
	waitAlerts(t, amAddr, jwAddr, map[string]string{"alertname": "JobwatchJobFailing", "job_name": "e2e_flaky", "team": "platform", "owner": "bob"})
}

// waitAlerts waits until Alertmanager holds an alert with the labels of
// each of want.
func waitAlerts(t *testing.T, amAddr, jwAddr string, want ...map[string]string) {
	t.Helper()
	testproc.Eventually(t, 40*time.Second, fmt.Sprintf("Alertmanager to get %v", want), func() error {
		got := amAlerts(t, amAddr)
		for _, w := range want {
			found := false
			for _, a := range got {
				found = found || hasLabels(a, w)
			}
			if !found {
				return fmt.Errorf("no alert with %v; it has %v\njobwatch /metrics:\n%s", w, labelsOf(got), jobwatchMetrics(t, jwAddr))
			}
		}
		return nil
	})
}

func labelsOf(as []amAlert) []map[string]string {
	var out []map[string]string
	for _, a := range as {
		out = append(out, a.Labels)
	}
	return out
}
