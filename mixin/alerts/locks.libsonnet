// Alerts from the locks source's probes (docs/locks.md) and from the
// durations behind the timeout advice. Strings followed by % are
// std.format strings: write %% for a literal %.
local promql = import '../lib/promql.libsonnet';

{
  rules(c)::
    local s = promql.selectors(c, [
      'jobwatch_lock_held',
      'jobwatch_lock_holder_alive',
      'jobwatch_lock_held_seconds',
      'jobwatch_lock_expires',
      'jobwatch_lock_ttl_seconds',
      'jobwatch_job_running',
      'jobwatch_job_run_start_timestamp_seconds',
      'jobwatch_job_timeout_seconds',
      'jobwatch_job_period_seconds',
      'jobwatch_job_duration_p99_seconds',
      'jobwatch_job_duration_seconds_count',
      'jobwatch_job_duration_seconds',  // native
    ]) + {
      // A lock series and its job's series on one jobwatch.
      here: promql.labels(c, ['instance', 'job_name']),
      job: promql.labels(c, ['job_name']),
    };
    local ts = promql.templateSelector(c);
    local holder = '{{ with printf "jobwatch_lock_holder_info{%sinstance=%%q,job_name=%%q,lock=%%q}" $labels.instance $labels.job_name $labels.lock | query }}{{ (. | first).Labels.holder }}{{ else }}an unknown holder{{ end }}' % [ts];
    [
      {
        alert: 'JobwatchLockStale',
        comment:: 'Value: 0, the holder is dead. The lock outlived its holder (a lock\nfile left by kill -9, a Redis token naming a dead local PID): every\nrun will skip until it is removed.',
        expr: |||
          %(jobwatch_lock_holder_alive)s == 0
        ||| % s,
        'for': '5m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'Lock {{ $labels.lock }} of job {{ $labels.job_name }} is held by a dead process on {{ $labels.instance }}',
          description: 'Lock {{ $labels.lock }} of job {{ $labels.job_name }} on {{ $labels.instance }} is held by ' + holder + ', which no longer exists: every run of the job will skip until the lock is removed.',
        },
      },
      {
        alert: 'JobwatchLockWithoutExpiry',
        comment:: 'Value: 0, the held Redis key has no TTL: after a crash it never\nexpires.',
        expr: |||
          %(jobwatch_lock_expires)s == 0
        ||| % s,
        'for': '2m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Redis lock {{ $labels.lock }} of job {{ $labels.job_name }} never expires',
          description: 'The Redis lock key {{ $labels.lock }} of job {{ $labels.job_name }}, held by ' + holder + ', has no TTL: if its holder dies, no host will run the job again until the key is deleted.',
        },
      },
      {
        alert: 'JobwatchLockExpiringWhileRunning',
        comment:: 'Value: seconds left of the lease, under 60 s and under half the\nlongest lease seen in 15 minutes, while a run of the job is in\nprogress on some host: the lease is not being renewed, and another\nhost will take the lock while this run goes on. A lease renewed every\nthird of it (jobwatch run) never falls below two thirds of itself,\nso a short one renewed on time stays quiet.',
        expr: |||
          (
              %(jobwatch_lock_ttl_seconds)s < 60
            and
              %(jobwatch_lock_ttl_seconds)s < 0.5 * max_over_time(%(jobwatch_lock_ttl_seconds)s[15m])
          )
          and on(%(job)s)
          (sum by (%(job)s) (%(jobwatch_job_running)s) > 0)
        ||| % s,
        'for': '0m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Redis lock {{ $labels.lock }} of job {{ $labels.job_name }} expires in {{ $value | humanizeDuration }} while the job runs',
          description: 'The lease of Redis lock {{ $labels.lock }} (held by ' + holder + ') runs out in {{ $value | humanizeDuration }} while a run of job {{ $labels.job_name }} is in progress: it is not being renewed, and a second host can take the lock and run the job at the same time.',
        },
      },
      {
        alert: 'JobwatchLockHeldWithoutRun',
        comment:: "Value: seconds the lock has been held, longer than the job's\ntimeout (or two periods without one), while no run of the job (on any\nhost) is in progress that started by the time the lock was taken (its\nsample's time less its age, with a minute's slack). A run that starts\nlater finds the lock held: it is refused and recorded as a skip, and is\nno holder, however briefly a source shows it in progress first.",
        expr: |||
          (
              %(jobwatch_lock_held_seconds)s
            > on(%(here)s) group_left()
              (%(jobwatch_job_timeout_seconds)s or on(%(here)s) (2 * %(jobwatch_job_period_seconds)s > 0))
          )
          unless
          (
              timestamp(%(jobwatch_lock_held_seconds)s) - %(jobwatch_lock_held_seconds)s + 60
            >= on(%(job)s) group_left()
              min by (%(job)s) (%(jobwatch_job_run_start_timestamp_seconds)s)
          )
        ||| % s,
        'for': '5m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Lock {{ $labels.lock }} of job {{ $labels.job_name }} held for {{ $value | humanizeDuration }} with no run in progress',
          description: 'Lock {{ $labels.lock }} of job {{ $labels.job_name }} on {{ $labels.instance }} has been held by ' + holder + ' for {{ $value | humanizeDuration }}, longer than a run may last, yet jobwatch sees no run of the job in progress that started by the time it was taken (runs started since find it held and skip): a forgotten child process, or a run whose records are lost, holds it.',
        },
      },
      {
        alert: 'JobwatchJobTimeoutTooTight',
        comment:: "Value: the configured timeout in seconds, below 1.5 times the P99\nof the job's last durations (with at least 20 finished runs: the\nhistogram's count, classic or native).",
        expr: |||
          (
              %(jobwatch_job_timeout_seconds)s
            <
              1.5 * %(jobwatch_job_duration_p99_seconds)s
          )
          and on(%(here)s)
          ((%(jobwatch_job_duration_seconds_count)s or histogram_count(%(jobwatch_job_duration_seconds)s)) >= 20)
        ||| % s,
        'for': '15m',
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Timeout of job {{ $labels.job_name }} is too tight for its runs on {{ $labels.instance }}',
          description: 'Job {{ $labels.job_name }} on {{ $labels.instance }} has a timeout of {{ $value | humanizeDuration }}, below 1.5 × the P99 of its last runs ({{ with printf "jobwatch_job_duration_p99_seconds{%sinstance=%%q,job_name=%%q}" $labels.instance $labels.job_name | query }}{{ . | first | value | humanizeDuration }}{{ end }}): healthy slow runs will be killed. `jobwatch advise` suggests a timeout.' % [ts],
        },
      },
    ],
}
