package promcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
)

// Contract lists the jobwatch metrics of issue 7's metric contract,
// histograms by their base name.
var Contract = []string{
	"jobwatch_job_last_success_timestamp_seconds",
	"jobwatch_job_seconds_since_last_success",
	"jobwatch_job_period_seconds",
	"jobwatch_job_stale",
	"jobwatch_job_stale_multiple",
	"jobwatch_job_timeout_seconds",
	"jobwatch_job_last_duration_seconds",
	"jobwatch_job_last_failure_timestamp_seconds",
	"jobwatch_job_last_exit_code",
	"jobwatch_job_consecutive_failures",
	"jobwatch_job_consecutive_skips",
	"jobwatch_job_running",
	"jobwatch_job_run_start_timestamp_seconds",
	"jobwatch_job_info",
	"jobwatch_job_next_run_timestamp_seconds",
	"jobwatch_job_deadline_timestamp_seconds",
	"jobwatch_source_up",
	"jobwatch_config_last_reload_successful",
	"jobwatch_config_last_reload_success_timestamp_seconds",
	"jobwatch_job_runs_total",
	"jobwatch_job_skips_total",
	"jobwatch_job_overlaps_total",
	"jobwatch_job_missed_runs_total",
	"jobwatch_job_unexpected_runs_total",
	"jobwatch_job_duplicate_runs_total",
	"jobwatch_source_records_total",
	"jobwatch_source_parse_errors_total",
	"jobwatch_source_unknown_job_records_total",
	"jobwatch_source_position_resets_total",
	"jobwatch_job_duration_seconds",
	"jobwatch_build_info",
}

// FromPrometheus are series Prometheus itself adds for every target.
var FromPrometheus = map[string]bool{"up": true}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// ProbeConfig writes a config of one job in a temporary directory of t and
// returns its path: enough for the real exporter (exporter.New, in the
// test) to build every collector whose names Names lists. The test builds
// it, not this package, so that nothing but cmd/ imports the exporter.
func ProbeConfig(t testing.TB) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "jobwatch.yml")
	if err := os.WriteFile(cfg, []byte("jobs:\n  - name: probe\n    every: 1m\n    timeout: 30s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Names lists the metric names the collectors describe (give it the real
// exporter's, Exporter.Collectors), and the build-info collector's, which
// cmd/jobwatch registers beside them.
func Names(collectors []prometheus.Collector) (map[string]bool, error) {
	cs := append([]prometheus.Collector{versioncollector.NewCollector("jobwatch")}, collectors...)
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	names := map[string]bool{}
	for d := range ch {
		m := fqNameRE.FindStringSubmatch(d.String())
		if m == nil {
			return nil, fmt.Errorf("cannot read the name of %s", d)
		}
		names[m[1]] = true
	}
	return names, nil
}

// Allowed is what rules and dashboards may query: the metrics of the
// exporter's collectors (as Names) and Prometheus' own per-target series.
func Allowed(collectors []prometheus.Collector) (map[string]bool, error) {
	names, err := Names(collectors)
	if err != nil {
		return nil, err
	}
	for n := range FromPrometheus {
		names[n] = true
	}
	return names, nil
}
