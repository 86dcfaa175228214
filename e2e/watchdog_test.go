package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestWatchdogAlerts: through a real Prometheus and Alertmanager with the
// bundled rules, a jobwatch target that dies fires JobwatchDown (with its
// instance) while JobwatchAbsent stays quiet, and a Prometheus that
// scrapes no jobwatch at all fires JobwatchAbsent and not JobwatchDown.
func TestWatchdogAlerts(t *testing.T) {
	prometheus := need(t, "prometheus", "prometheus")
	alertmanager := need(t, "prometheus-alertmanager", "prometheus-alertmanager")
	dir := t.TempDir()
	bin := testproc.BuildJobwatch(t, dir)

	jwConfig := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, jwConfig, "jobs:\n  - name: e2e_nightly\n    every: 1h\n")
	jwAddr, stopJobwatch := startJobwatch(t, bin, jwConfig, filepath.Join(dir, "state"))
	amAddr := startAlertmanager(t, alertmanager, dir)
	withJobwatch := startPrometheus(t, prometheus, filepath.Join(dir, "p1"), amAddr, fmt.Sprintf(`
  - job_name: jobwatch
    static_configs: [{targets: [%q]}]
`, jwAddr))

	// Scraped and up: neither alert is firing (JobwatchAbsent, with its
	// for: cut to 0s, may have fired before the first scrape).
	waitQuery(t, withJobwatch, `up{job="jobwatch"} == 1`, 1)
	waitQuery(t, withJobwatch, `ALERTS{alertname=~"JobwatchDown|JobwatchAbsent"}`, 0)

	// jobwatch stops: JobwatchDown reaches Alertmanager for its instance.
	stopJobwatch()
	want := map[string]string{"alertname": "JobwatchDown", "instance": jwAddr, "job": "jobwatch", "severity": "critical"}
	testproc.Eventually(t, 40*time.Second, fmt.Sprintf("Alertmanager to get %v", want), func() error {
		for _, a := range amAlerts(t, amAddr) {
			if hasLabels(a, want) {
				return nil
			}
		}
		return fmt.Errorf("it has %s", describe(amAlerts(t, amAddr)))
	})
	// The target is there, down: JobwatchAbsent is quiet.
	if n, _, err := promQuery(withJobwatch, `ALERTS{alertname="JobwatchAbsent"}`, true); err != nil || n != 0 {
		t.Errorf("JobwatchAbsent active (%d series, %v) while the jobwatch target is only down", n, err)
	}

	// A Prometheus with no jobwatch target (it scrapes Alertmanager only).
	without := startPrometheus(t, prometheus, filepath.Join(dir, "p2"), amAddr, fmt.Sprintf(`
  - job_name: alertmanager
    static_configs: [{targets: [%q]}]
`, amAddr))
	waitQuery(t, without, `up{job="alertmanager"} == 1`, 1)
	waitQuery(t, without, `ALERTS{alertname="JobwatchAbsent", alertstate="firing", job="jobwatch", severity="critical"}`, 1)
	if n, _, err := promQuery(without, `ALERTS{alertname="JobwatchDown"}`, true); err != nil || n != 0 {
		t.Errorf("JobwatchDown active (%d series, %v) on a Prometheus without a jobwatch target", n, err)
	}
}

// waitQuery waits until the instant query expr gives n series.
func waitQuery(t *testing.T, promAddr, expr string, n int) {
	t.Helper()
	testproc.Eventually(t, 40*time.Second, fmt.Sprintf("%d series of %s", n, expr), func() error {
		got, _, err := promQuery(promAddr, expr, true)
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("%d series", got)
		}
		return nil
	})
}

// hasLabels: a has every label of want, with its value.
func hasLabels(a amAlert, want map[string]string) bool {
	for k, v := range want {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}
