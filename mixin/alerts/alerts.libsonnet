// The jobwatch rule group: job and lock alerts, then alerts about jobwatch
// itself and what its discovery found on the host. Every alert gets its
// runbook_url from _config.runbookURLPrefix; a job's alerts also link its
// status page, when jobwatch knows the URL it is reached under
// (--web.external-url), and carry its labels (_config.jobLabels).
local promql = import '../lib/promql.libsonnet';
local discovery = import 'discovery.libsonnet';
local exporter = import 'exporter.libsonnet';
local jobs = import 'jobs.libsonnet';
local locks = import 'locks.libsonnet';

{
  prometheusAlerts+:: {
    groups+: [
      {
        name: 'jobwatch',
        rules: [
          r {
            expr: promql.withJobLabels($._config, super.expr),
            annotations+: { runbook_url: promql.runbook($._config, r.alert), status_url: promql.statusURL($._config) },
          }
          for r in jobs.rules($._config) + locks.rules($._config)
        ] + [
          r { annotations+: { runbook_url: promql.runbook($._config, r.alert) } }
          for r in exporter.rules($._config) + discovery.rules($._config)
        ],
      },
    ],
  },
}
