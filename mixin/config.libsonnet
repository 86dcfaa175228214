// What the jobwatch mixin lets you set. Override it in your own jsonnet:
//
//   (import 'jobwatch/mixin/mixin.libsonnet') + {
//     _config+:: { jobwatchSelector: 'job="jobwatch"', clusterLabel: 'cluster' },
//   }
{
  _config+:: {
    // Label matchers added to every jobwatch series the rules and the
    // dashboard select, for example 'job="jobwatch"'. Empty: any series with
    // a jobwatch metric name.
    jobwatchSelector: '',

    // Label matchers that select jobwatch's scrape targets in Prometheus' up
    // series, for JobwatchDown (up == 0) and JobwatchAbsent (no such target
    // at all). Defaults to jobwatchSelector, or 'job="jobwatch"' when that
    // is empty: up has no jobwatch metric name to tell its targets apart.
    jobwatchTargetSelector: if self.jobwatchSelector != '' then self.jobwatchSelector else 'job="jobwatch"',

    // The label that tells clusters apart when one Prometheus scrapes
    // several of them, for example 'cluster'. Rules about cluster-scope jobs
    // then group and match by it as well as by job_name, and alerts carry
    // it. Empty: all instances form one cluster (grouped by job_name alone).
    clusterLabel: '',

    // The label of the dashboard's cluster variable: clusterLabel, or
    // 'cluster' when that is empty. Series without the label match the
    // variable's "All".
    dashboardClusterLabel: if self.clusterLabel != '' then self.clusterLabel else 'cluster',

    // The labels of a job (its labels: in jobwatch.yml, exported as
    // jobwatch_job_labels_info) that every alert about the job carries, for
    // Alertmanager to route on, and the dashboard has a variable for
    // (docs/ownership.md): team and owner, and user and unit, which
    // discover gives the jobs it finds. A job without one of them alerts
    // without it; an empty list leaves the alerts as they are. Keep out the
    // labels your scrape config gives jobwatch's targets.
    jobLabels: ['team', 'owner', 'user', 'unit'],

    // Prefix of every alert's runbook_url; the alert's name in lower case
    // follows it. The default is the published runbook, an absolute URL
    // that Alertmanager's receivers can open; set 'alerts/runbook.md#' for
    // URLs relative to the repository root, or your own copy's URL.
    runbookURLPrefix: 'https://github.com/jobwatch/jobwatch/blob/main/alerts/runbook.md#',

    // Dashboard identity.
    dashboardUID: 'jobwatch',
    dashboardTitle: 'jobwatch',
    dashboardTags: ['jobwatch', 'cron'],
  },
}
