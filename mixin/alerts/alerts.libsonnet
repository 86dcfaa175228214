// The jobwatch rule group: job alerts, then alerts about jobwatch itself.
// Every alert gets its runbook_url from _config.runbookURLPrefix.
local promql = import '../lib/promql.libsonnet';
local exporter = import 'exporter.libsonnet';
local jobs = import 'jobs.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'jobwatch',
        rules: [
          r { annotations+: { runbook_url: promql.runbook($._config, r.alert) } }
          for r in jobs.rules($._config) + exporter.rules($._config)
        ],
      },
    ],
  },
}
