package collector

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/internal/labelname"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/observation"
)

// The label names of jobwatch's metrics are not a config's to give its
// jobs (labels:): the list is read from the descriptors, and from the
// kinds of observation the sources register, when a config is checked.
func init() {
	labelname.Reserve(func() []string {
		var names []string
		for _, m := range descInfo {
			names = append(names, m.labels...)
		}
		for _, k := range observation.Kinds() {
			names = append(names, k.Key)
			for _, m := range k.Metrics {
				if m.Label != "" {
					names = append(names, m.Label)
				}
			}
		}
		return names
	})
}

// The metrics of what the config says of a job for the rules to read
// (docs/ownership.md). A threshold is present only for the jobs that set
// it (the job itself or the file's top level), and the labels info only
// when some job has labels: a config without them costs no series, and
// the rules fall back to their defaults.
var (
	// labelsInfoDesc describes jobwatch_job_labels_info; its series have
	// the config's label names besides job_name, which a reload may change.
	labelsInfoDesc       = desc("job_labels_info", "The job's labels from the config (labels:), for alerts and dashboards to join on job_name: every label name any job has, empty where the job has none; absent when no job has labels.", jobLabels...)
	alertAfterFailures   = desc("job_alert_after_failures", "Failures in a row that make JobwatchJobFailing fire for the job (alert_after.failures); absent when not set (2).", jobLabels...)
	alertAfterMissedRuns = desc("job_alert_after_missed_runs", "Missed runs in a row that make JobwatchJobMissedRun fire for the job (alert_after.missed_runs); absent when not set (1).", jobLabels...)
	alertAfterSkips      = desc("job_alert_after_skips", "Skips in a row that make JobwatchJobSkippingRepeatedly fire for the job (alert_after.skips); absent when not set (3).", jobLabels...)
)

// JobConfig renders the jobs' labels and alert thresholds. They change
// with the config only, so the metrics are made once per config
// (Configure), not at each scrape.
type JobConfig struct {
	mu      sync.RWMutex
	metrics []prometheus.Metric
}

var _ prometheus.Collector = (*JobConfig)(nil)

// NewJobConfig returns a JobConfig of no jobs.
func NewJobConfig() *JobConfig { return &JobConfig{} }

// Configure makes the metrics of jobs. When a job has labels, every job
// has a labels info series with every label name any job has, empty where
// it has none: the family keeps one set of label names, and a dashboard
// filtering on a label finds each job's value, empty included.
func (c *JobConfig) Configure(jobs []model.JobSpec) {
	keys := map[string]bool{}
	for _, j := range jobs {
		for k := range j.Labels {
			keys[k] = true
		}
	}
	names := slices.Sorted(maps.Keys(keys))
	info := prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "job_labels_info"), descInfo[labelsInfoDesc].help,
		append([]string{"job_name"}, names...), nil)
	var out []prometheus.Metric
	for _, j := range jobs {
		if len(names) > 0 {
			lvs := []string{j.Name}
			for _, k := range names {
				lvs = append(lvs, j.Labels[k])
			}
			out = append(out, prometheus.MustNewConstMetric(info, prometheus.GaugeValue, 1, lvs...))
		}
		for _, t := range []struct {
			d *prometheus.Desc
			n int
		}{{alertAfterFailures, j.AlertAfter.Failures}, {alertAfterMissedRuns, j.AlertAfter.MissedRuns}, {alertAfterSkips, j.AlertAfter.Skips}} {
			if t.n > 0 {
				out = append(out, prometheus.MustNewConstMetric(t.d, prometheus.GaugeValue, float64(t.n), j.Name))
			}
		}
	}
	c.mu.Lock()
	c.metrics = out
	c.mu.Unlock()
}

// Describe implements prometheus.Collector. jobwatch_job_labels_info is
// described with job_name alone: its other label names are the config's.
func (c *JobConfig) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{labelsInfoDesc, alertAfterFailures, alertAfterMissedRuns, alertAfterSkips} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *JobConfig) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range c.metrics {
		ch <- m
	}
}
