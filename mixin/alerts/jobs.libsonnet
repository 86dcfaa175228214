// Alerts about the jobs jobwatch watches. Strings followed by % are
// std.format strings: write %% for a literal %.
local promql = import '../lib/promql.libsonnet';

{
  rules(c)::
    local s = promql.selectors(c, [
      'jobwatch_job_seconds_since_last_success',
      'jobwatch_job_stale',
      'jobwatch_job_running',
      'jobwatch_job_overlaps_total',
      'jobwatch_job_period_seconds',
      'jobwatch_job_consecutive_skips',
      'jobwatch_job_last_success_timestamp_seconds',
      'jobwatch_job_consecutive_failures',
      'jobwatch_job_last_failure_timestamp_seconds',
      'jobwatch_job_run_start_timestamp_seconds',
      'jobwatch_job_duplicate_runs_total',
      'jobwatch_job_lock_lost_total',
      'jobwatch_job_consecutive_missed_runs',
      'jobwatch_job_unexpected_runs_total',
      'jobwatch_job_alert_after_failures',
      'jobwatch_job_alert_after_missed_runs',
      'jobwatch_job_alert_after_skips',
    ]) + {
      cluster_info: promql.metric(c, 'jobwatch_job_info', ['scope="cluster"']),
      // by (...) and on(...) of a job across its instances. A job's series
      // on one instance are matched on all their labels (no on(), or
      // ignoring() its own extra labels) and grouped without() theirs, so
      // an alert keeps every label of its target (cluster, env, ... as the
      // scrape config adds them).
      job: promql.labels(c, ['job_name']),
    };
    // The label matchers annotation queries start with: the jobwatch
    // selector, then the alert's own labels ($sel for job alerts that may
    // be about a cluster job).
    local ts = promql.templateSelector(c);
    local sel =
      if c.clusterLabel == '' then '{{ $sel := printf "%sjob_name=%%q" $labels.job_name }}' % [ts]
      else '{{ $sel := printf "%s%s=%%q,job_name=%%q" $labels.%s $labels.job_name }}' % [ts, c.clusterLabel, c.clusterLabel];
    // A counter counted something in the last 10 minutes when it increased,
    // or when its series was first seen then with a value above 0:
    // increase() misses what a counter already holds when its series
    // appears (history read on jobwatch's first start, a job added by a
    // reload). A series that existed a day earlier is not new, only back
    // after a gap (jobwatch restarted, its counters restored from its state).
    local increased(x) = 'increase(%s[10m]) > 0' % x;
    local firstSeen(x) = '(%(x)s unless %(x)s offset 10m unless %(x)s offset 1d) > 0' % { x: x };
    // countedDay(x): what counter x counted in the last day, for a
    // description's printf (x is a printf format with its matchers):
    // the counter's whole value for a series younger than a day.
    // atLeast(x, t, d): x where it reached its job's threshold t (an
    // alert_after: count, exported only when set), or the default d where
    // the job sets none. x and t are one target's series, matched on every
    // label; on(job) matches a cluster job's x, by job alone.
    local atLeast(x, t, d, on='') =
      if on == '' then '(\n    %(x)s >= %(t)s\n  or\n    %(x)s >= %(d)d unless %(t)s\n)' % { x: x, t: t, d: d }
      else '(\n    %(x)s >= on(%(on)s) max by (%(on)s) (%(t)s)\n  or\n    %(x)s >= %(d)d unless on(%(on)s) %(t)s\n)' % { x: x, t: t, d: d, on: on };
    local countedDay(x) = '(increase(%(x)s[1d]) and %(x)s offset 1d) or %(x)s' % { x: x };
    [
      {
        alert: 'JobwatchJobStale',
        comment:: 'Value: seconds since the last success (cluster: on the host that\nsucceeded last).',
        expr: |||
          (
              %(jobwatch_job_seconds_since_last_success)s
            and
              (%(jobwatch_job_stale)s == 1)
            unless ignoring(scope)
              %(cluster_info)s
          )
          or
          (
              min by (%(job)s) (%(jobwatch_job_seconds_since_last_success)s and ignoring(scope) %(cluster_info)s)
            and on(%(job)s)
              (min by (%(job)s) (%(jobwatch_job_stale)s and ignoring(scope) %(cluster_info)s) == 1)
          )
        ||| % s,
        'for': '2m',
        labels: { severity: 'critical' },
        annotations: {
          summary: '{{ if $labels.instance }}Job {{ $labels.job_name }} is stale on {{ $labels.instance }}{{ else }}Cluster job {{ $labels.job_name }} is stale on every host{{ end }}',
          description: sel + '{{ if $labels.instance }}{{ $sel = printf "%s,instance=%q" $sel $labels.instance }}{{ end }}Job {{ $labels.job_name }} has not succeeded {{ if $labels.instance }}on {{ $labels.instance }}{{ else }}on any host{{ end }} for {{ $value | humanizeDuration }}: more than {{ with printf "max(jobwatch_job_stale_multiple{%s})" $sel | query }}{{ . | first | value }}{{ end }} periods of {{ with printf "max(jobwatch_job_period_seconds{%s})" $sel | query }}{{ . | first | value | humanizeDuration }}{{ end }}.',
        },
      },
      {
        alert: 'JobwatchJobOverlapping',
        comment:: 'Value: runs in progress now on one host (a host-scope job runs on\nevery host, at the same time), or across hosts (a cluster-scope job: each\nrun, by host and PID, counted once however many replicas report it);\nor overlaps counted in the last 10m (increased, or first seen with a\nvalue: increase() cannot see what a series held when it appeared, as\nafter history read on first start); or, held for the period, seconds\nsince the last one.',
        expr: |||
          (
              max without (host) (count without (pid) (%(jobwatch_job_run_start_timestamp_seconds)s)) > 1
            unless ignoring(scope)
              %(cluster_info)s
          )
          or
          (
            count by (%(job)s) (group by (%(job)s, host, pid) (%(jobwatch_job_run_start_timestamp_seconds)s and ignoring(host, pid, scope) %(cluster_info)s)) > 1
          )
          or
          (
            %(increased)s
          )
          or
          (
            %(firstSeen)s
          )
          or
          (
              time() - max_over_time(timestamp(%(increased)s or %(firstSeen)s)[1d:5m])
            <
              %(jobwatch_job_period_seconds)s
          )
        ||| % (s { increased: increased(s.jobwatch_job_overlaps_total), firstSeen: firstSeen(s.jobwatch_job_overlaps_total) }),
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} has overlapping runs{{ if $labels.instance }} on {{ $labels.instance }}{{ else }} across hosts{{ end }}',
          description: sel + '{{ if $labels.instance }}{{ $sel = printf "%s,instance=%q" $sel $labels.instance }}{{ end }}Job {{ $labels.job_name }} has {{ with printf "sum(jobwatch_job_running{%s})" $sel | query }}{{ . | first | value }}{{ end }} runs in progress{{ if $labels.instance }} on {{ $labels.instance }}{{ else }} across hosts{{ end }}{{ with printf "sort(jobwatch_job_run_start_timestamp_seconds{%s})" $sel | query }} (host/PID:{{ range . }} {{ .Labels.host }}/{{ .Labels.pid }}{{ end }}){{ end }}; overlaps counted in the last day: {{ with printf "sum(' + countedDay('jobwatch_job_overlaps_total{%[1]s}') + ')" $sel | query }}{{ . | first | value | printf "%.0f" }}{{ end }}.',
        },
      },
      {
        alert: 'JobwatchJobSkippingRepeatedly',
        comment:: 'Value: consecutive skips on this instance.\nA cluster job that succeeded on some host within the last 1.5\nperiods is not stuck: its skips are the hosts that lost the lock.',
        expr: |||
          %(atLeast)s
          unless on(%(job)s)
          (
              time() - max by (%(job)s) (%(jobwatch_job_last_success_timestamp_seconds)s and ignoring(scope) %(cluster_info)s)
            < on(%(job)s)
              1.5 * max by (%(job)s) (%(jobwatch_job_period_seconds)s)
          )
        ||| % (s { atLeast: atLeast(s.jobwatch_job_consecutive_skips, s.jobwatch_job_alert_after_skips, 3) }),
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} skipped {{ $value }} times in a row on {{ $labels.instance }}',
          description: 'Job {{ $labels.job_name }} on {{ $labels.instance }} has skipped its last {{ $value }} runs: the previous run{{ with printf "sort(jobwatch_job_run_start_timestamp_seconds{%sjob_name=%%q,instance=%%q})" $labels.job_name $labels.instance | query }} ({{ range $i, $r := . }}{{ if $i }}, {{ end }}host {{ $r.Labels.host }} PID {{ $r.Labels.pid }}{{ end }}){{ end }} never finishes within the period of {{ with printf "jobwatch_job_period_seconds{%sjob_name=%%q,instance=%%q}" $labels.job_name $labels.instance | query }}{{ . | first | value | humanizeDuration }}{{ end }}.' % [ts, ts],
        },
      },
      {
        alert: 'JobwatchJobFailing',
        comment:: "Value: consecutive failures on this instance.\nA cluster job's failures on one host are over once any host\nsucceeded after them.",
        expr: |||
          %(atLeast)s
          unless
          (
              (%(jobwatch_job_last_failure_timestamp_seconds)s and ignoring(scope) %(cluster_info)s)
            < on(%(job)s) group_left
              max by (%(job)s) (%(jobwatch_job_last_success_timestamp_seconds)s)
          )
        ||| % (s { atLeast: atLeast(s.jobwatch_job_consecutive_failures, s.jobwatch_job_alert_after_failures, 2) }),
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} failed {{ $value }} times in a row on {{ $labels.instance }}',
          description: 'The last {{ $value }} runs of job {{ $labels.job_name }} on {{ $labels.instance }} did not succeed; the last exit code was {{ with printf "jobwatch_job_last_exit_code{%sjob_name=%%q,instance=%%q}" $labels.job_name $labels.instance | query }}{{ . | first | value }}{{ else }}not reported{{ end }}.' % [ts],
        },
      },
      {
        alert: 'JobwatchJobRunningTooLong',
        comment:: 'Value: age of the run in seconds. One alert per run (host, pid).',
        expr: |||
          (time() - %(jobwatch_job_run_start_timestamp_seconds)s)
          > ignoring(host, pid) group_left()
          (%(jobwatch_job_period_seconds)s > 0)
        ||| % s,
        'for': '1m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} has been running for {{ $value | humanizeDuration }} on {{ $labels.host }}',
          description: 'The run of job {{ $labels.job_name }} on host {{ $labels.host }} (PID {{ $labels.pid }}, seen by {{ $labels.instance }}) has been running for {{ $value | humanizeDuration }}, longer than the period of {{ with printf "jobwatch_job_period_seconds{%sjob_name=%%q,instance=%%q}" $labels.job_name $labels.instance | query }}{{ . | first | value | humanizeDuration }}{{ end }}: the next run will overlap it or be skipped.' % [ts],
        },
      },
      {
        alert: 'JobwatchJobDuplicateRuns',
        comment:: 'Value: duplicate runs counted, or seconds since the last one\n(see JobwatchJobOverlapping).',
        expr: |||
          (
            %(increased)s
          )
          or
          (
            %(firstSeen)s
          )
          or
          (
              time() - max_over_time(timestamp(%(increased)s or %(firstSeen)s)[1d:5m])
            < ignoring(kind) group_left
              %(jobwatch_job_period_seconds)s
          )
        ||| % (s { increased: increased(s.jobwatch_job_duplicate_runs_total), firstSeen: firstSeen(s.jobwatch_job_duplicate_runs_total) }),
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} ran more than once for one slot on {{ $labels.instance }} ({{ $labels.kind }})',
          description: 'Job {{ $labels.job_name }} on {{ $labels.instance }} had {{ with printf "sum(' + countedDay('jobwatch_job_duplicate_runs_total{' + ts + 'job_name=%[1]q,instance=%[2]q,kind=%[3]q}') + ')" $labels.job_name $labels.instance $labels.kind | query }}{{ . | first | value | printf "%.0f" }}{{ end }} duplicate runs of kind {{ $labels.kind }} in the last day: more than one run for one expected slot.',
        },
      },
      {
        alert: 'JobwatchJobMissedRun',
        comment:: 'Value: expected runs in a row for which no run started within grace\n(jobwatch_job_consecutive_missed_runs, a decided verdict: 0 again once a\nrun starts or is skipped). A cluster job misses a run only when no host\nstarted it: the fewest missed on any instance that reports it.',
        expr: |||
          (
            %(host)s
            unless ignoring(scope)
              %(cluster_info)s
          )
          or
          %(cluster)s
        ||| % (s {
                 host: std.strReplace(atLeast(s.jobwatch_job_consecutive_missed_runs, s.jobwatch_job_alert_after_missed_runs, 1), '\n', '\n  '),
                 cluster: atLeast('min by (%(job)s) (%(jobwatch_job_consecutive_missed_runs)s and ignoring(scope) %(cluster_info)s)' % s,
                                  s.jobwatch_job_alert_after_missed_runs,
                                  1,
                                  s.job),
               }),
        'for': '2m',
        labels: { severity: 'warning' },
        annotations: {
          summary: '{{ if $labels.instance }}Job {{ $labels.job_name }} missed {{ $value }} expected run(s) on {{ $labels.instance }}{{ else }}Cluster job {{ $labels.job_name }} missed {{ $value }} expected run(s) on every host{{ end }}',
          description: sel + '{{ if $labels.instance }}{{ $sel = printf "%s,instance=%q" $sel $labels.instance }}{{ end }}No run of job {{ $labels.job_name }} started {{ if $labels.instance }}on {{ $labels.instance }}{{ else }}on any host{{ end }} within grace of its last {{ $value }} expected run(s). The last expected run was at {{ with printf "max(jobwatch_job_next_run_timestamp_seconds{%[1]s} - jobwatch_job_period_seconds{%[1]s})" $sel | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}, with a period of {{ with printf "max(jobwatch_job_period_seconds{%s})" $sel | query }}{{ . | first | value | humanizeDuration }}{{ end }} (next expected at {{ with printf "max(jobwatch_job_next_run_timestamp_seconds{%s})" $sel | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}); the job turns stale at {{ with printf "max(jobwatch_job_deadline_timestamp_seconds{%s})" $sel | query }}{{ . | first | value | humanizeTimestamp }}{{ end }} unless a run succeeds.',
        },
      },
      {
        alert: 'JobwatchJobUnexpectedRuns',
        comment:: 'Value: runs started in the last hour when the schedule gave none\n(jobwatch_job_unexpected_runs_total). A counter first seen with a value\n(history read on first start) does not fire by itself: only new ones.',
        expr: |||
          increase(%(jobwatch_job_unexpected_runs_total)s[1h]) > 0
        ||| % s,
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} ran at times its schedule does not give on {{ $labels.instance }}',
          description: 'Job {{ $labels.job_name }} on {{ $labels.instance }} started {{ $value | printf "%%.0f" }} run(s) in the last hour when none was expected (its last expected run was at {{ with printf "jobwatch_job_next_run_timestamp_seconds{%(ts)sjob_name=%%[1]q,instance=%%[2]q} - jobwatch_job_period_seconds{%(ts)sjob_name=%%[1]q,instance=%%[2]q}" $labels.job_name $labels.instance | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}, with a period of {{ with printf "jobwatch_job_period_seconds{%(ts)sjob_name=%%q,instance=%%q}" $labels.job_name $labels.instance | query }}{{ . | first | value | humanizeDuration }}{{ end }}): the scheduler and jobwatch.yml disagree on when it runs, typically on the time zone (cron ignoring CRON_TZ, a timer or host in another zone), or it was started by hand.' % { ts: ts },
        },
      },
      {
        alert: 'JobwatchJobLockLost',
        comment:: 'Value: shared locks lost in the last hour (or the count of a series\nfirst seen with a value: its first loss).',
        expr: |||
          (
            increase(%(jobwatch_job_lock_lost_total)s[1h]) > 0
          )
          or
          (
            %(firstSeen)s
          )
        ||| % (s { firstSeen: firstSeen(s.jobwatch_job_lock_lost_total) }),
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Job {{ $labels.job_name }} lost its {{ $labels.lock }} lock while running ({{ $labels.instance }})',
          description: 'A run of job {{ $labels.job_name }} seen by {{ $labels.instance }} lost its shared {{ $labels.lock }} lock while it ran ({{ $value | printf "%.0f" }} in the last hour): another host may have run the job at the same time. With --on-lock-lost=kill the run was killed and recorded as failed (reason lock_lost); with warn it went on.',
        },
      },
    ],
}
