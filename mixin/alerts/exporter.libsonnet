// Alerts about jobwatch itself: whether it is up and scraped at all, its
// sources, its config and its state.
// Descriptions that name the jobwatch selector (%s) are std.format strings:
// write %% for a literal % (printf "%%.0f").
local promql = import '../lib/promql.libsonnet';

{
  rules(c)::
    local s = promql.selectors(c, [
      'jobwatch_source_up',
      'jobwatch_config_last_reload_successful',
      'jobwatch_state_save_failures_total',
      'jobwatch_host_clock_skew_seconds',
    ]);
    local ts = promql.templateSelector(c);
    local up = 'up{%s}' % c.jobwatchTargetSelector;
    [
      {
        alert: 'JobwatchDown',
        comment:: 'A jobwatch target Prometheus cannot scrape: every job alert of that\ninstance resolves once its series go stale, so this one must page.',
        expr: |||
          %s == 0
        ||| % up,
        'for': '5m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'jobwatch on {{ $labels.instance }} is down',
          description: 'Prometheus has not been able to scrape jobwatch on {{ $labels.instance }} (scrape job {{ $labels.job }}) for 5 minutes: jobwatch is stopped, crashed, or unreachable. Nothing watches the jobs of that host meanwhile, and every alert about them has resolved because their series are gone.',
        },
      },
      {
        alert: 'JobwatchAbsent',
        comment:: 'No jobwatch target at all: the scrape config lost it, or service\ndiscovery finds none. JobwatchDown cannot fire without a target.',
        expr: |||
          absent(%s)
        ||| % up,
        'for': '5m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'Prometheus scrapes no jobwatch target',
          description: 'For 5 minutes Prometheus has had no target matching %s: no jobwatch is scraped at all (the scrape config or its service discovery lost them), so no job alert can fire, and JobwatchDown cannot either.' % up,
        },
      },
      {
        alert: 'JobwatchSourceDown',
        expr: |||
          %(jobwatch_source_up)s == 0
        ||| % s,
        'for': '5m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'jobwatch source {{ $labels.source }} is unreadable on {{ $labels.instance }}',
          description: 'jobwatch on {{ $labels.instance }} has not been able to read its {{ $labels.type }} source {{ $labels.source }} for 5 minutes: the jobs it reports on are blind there and will turn stale.',
        },
      },
      {
        alert: 'JobwatchConfigReloadFailed',
        expr: |||
          %(jobwatch_config_last_reload_successful)s == 0
        ||| % s,
        'for': '5m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'jobwatch on {{ $labels.instance }} failed to reload its configuration',
          description: 'The last configuration reload of jobwatch on {{ $labels.instance }} failed; it keeps running the configuration loaded at {{ with printf "jobwatch_config_last_reload_success_timestamp_seconds{%sinstance=%%q}" $labels.instance | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}.' % [ts],
        },
      },
      {
        alert: 'JobwatchStateSaveFailing',
        comment:: 'Value: failed saves in the last 5 minutes.',
        expr: |||
          increase(%(jobwatch_state_save_failures_total)s[5m]) > 0
        ||| % s,
        'for': '10m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'jobwatch on {{ $labels.instance }} cannot save its state',
          description: 'jobwatch on {{ $labels.instance }} failed to save its state {{ $value | printf "%%.0f" }} times in the last 5 minutes (disk full, permissions). It keeps reading its sources, but its metrics stay at the state it last saved, at {{ with printf "jobwatch_state_last_save_timestamp_seconds{%sinstance=%%q}" $labels.instance | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}, until a save succeeds: no counter moves meanwhile, so none can go back if it is restarted or killed (it then reads again everything since that save).' % [ts],
        },
      },
      {
        alert: 'JobwatchHostClockSkew',
        comment:: "Value: the host's estimated offset, seconds (positive: ahead).",
        expr: |||
          abs(%(jobwatch_host_clock_skew_seconds)s) > 60
        ||| % s,
        'for': '10m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'The clock of {{ $labels.host }} is {{ $value | humanizeDuration }} off, as jobwatch on {{ $labels.instance }} reads its records',
          description: 'The records of host {{ $labels.host }} are dated {{ with printf "jobwatch_host_clock_skew_seconds{%sinstance=%%q,host=%%q}" $labels.instance $labels.host | query }}{{ . | first | value | printf "%%.0f" }}{{ end }} s from the time jobwatch on {{ $labels.instance }} reads them (positive: ahead) for 10 minutes: its clock is off. jobwatch keeps its sources\' watermarks at its own clock, so the host\'s runs are decided late (ahead) or arrive as late records (behind), and its jobs\' timestamps are off by as much.' % [ts],
        },
      },
    ],
}
