// Alerts from jobwatch's discovery of the host's crontabs and timers
// (docs/discover.md).
local promql = import '../lib/promql.libsonnet';

{
  rules(c)::
    [
      {
        alert: 'JobwatchScheduledTwice',
        comment:: "Value: commands on the host scheduled twice (a cron line and a\ntimer, or two crontabs), as jobwatch's discovery counts them.",
        expr: |||
          %(duplicates)s > 0
        ||| % { duplicates: promql.metric(c, 'jobwatch_discovery_findings', ['kind="duplicate_command"']) },
        'for': '15m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'A command is scheduled twice on {{ $labels.instance }}',
          description: '{{ $value }} command(s) on {{ $labels.instance }} are scheduled both in cron and in a systemd timer, or in two crontabs: each runs twice. `jobwatch discover --root / --output -` on the host names the file and line of each.',
        },
      },
    ],
}
