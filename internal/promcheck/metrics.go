package promcheck

// Exported lists the metric names jobwatch exports (the metric contract of
// issue 7), histograms by their base name. The end-to-end test holds it
// against the real exporter's /metrics.
var Exported = map[string]bool{
	"jobwatch_job_last_success_timestamp_seconds":           true,
	"jobwatch_job_seconds_since_last_success":               true,
	"jobwatch_job_period_seconds":                           true,
	"jobwatch_job_stale":                                    true,
	"jobwatch_job_stale_multiple":                           true,
	"jobwatch_job_timeout_seconds":                          true,
	"jobwatch_job_last_duration_seconds":                    true,
	"jobwatch_job_last_failure_timestamp_seconds":           true,
	"jobwatch_job_last_exit_code":                           true,
	"jobwatch_job_consecutive_failures":                     true,
	"jobwatch_job_consecutive_skips":                        true,
	"jobwatch_job_running":                                  true,
	"jobwatch_job_run_start_timestamp_seconds":              true,
	"jobwatch_job_info":                                     true,
	"jobwatch_job_next_run_timestamp_seconds":               true,
	"jobwatch_job_deadline_timestamp_seconds":               true,
	"jobwatch_source_up":                                    true,
	"jobwatch_config_last_reload_successful":                true,
	"jobwatch_config_last_reload_success_timestamp_seconds": true,
	"jobwatch_job_runs_total":                               true,
	"jobwatch_job_skips_total":                              true,
	"jobwatch_job_overlaps_total":                           true,
	"jobwatch_job_missed_runs_total":                        true,
	"jobwatch_job_unexpected_runs_total":                    true,
	"jobwatch_job_duplicate_runs_total":                     true,
	"jobwatch_source_records_total":                         true,
	"jobwatch_source_parse_errors_total":                    true,
	"jobwatch_source_unknown_job_records_total":             true,
	"jobwatch_source_position_resets_total":                 true,
	"jobwatch_job_duration_seconds":                         true,
	"jobwatch_build_info":                                   true,
	// Prometheus' own, per target.
	"up": true,
}
