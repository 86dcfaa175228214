// The comment at the top of the generated rule file, for a _config.
function(c)
  local cluster =
    if c.clusterLabel == '' then |||
      #   Instances are grouped into a cluster by job_name alone. If one Prometheus
      #   scrapes several clusters, set the mixin's clusterLabel: every
      #   `by (job_name)` and `on(job_name)` then names it too.
    ||| else |||
      #   Instances are grouped into a cluster by their %s label and job_name
      #   (the mixin's clusterLabel): alerts about cluster jobs carry both.
    ||| % c.clusterLabel;
  local selector =
    if c.jobwatchSelector == '' then ''
    else "# Every jobwatch series is selected with {%s} (the mixin's jobwatchSelector).\n#\n" % c.jobwatchSelector;
  |||
    # jobwatch alerting rules. Load with Prometheus 2.x or 3.x:
    #
    #   rule_files: [/etc/prometheus/rules/jobwatch.rules.yml]
    #
    # Generated from the jobwatch monitoring mixin (mixin/, jsonnet) by
    # `go generate ./mixin`: change the mixin, not this file. To write the rules
    # for your own selector, cluster label or runbook location:
    #
    #   go run ./mixin/cmd/generate -root DIR -config '{"clusterLabel": "cluster"}'
    #
    %(selector)s# Metrics come from one jobwatch per host, each scraped as its own target
    # (its own `instance` label). Every alert about a job carries `job_name`
    # (the jobwatch job; `job` stays Prometheus' scrape job).
    #
    # Scope. Each job's jobwatch_job_info{job_name,scope} says how to read it:
    #   scope="host"    every host that watches the job must run it: the alert is
    #                   per instance and carries `instance`.
    #   scope="cluster" one run per slot on any one host: the alert is about the
    #                   job across all instances and carries only `job_name`
    #                   (stale only when stale on every instance that reports
    #                   it; overlapping when runs on all instances add up to more
    #                   than one). A job without an info series counts as host.
    %(cluster)s#
    # Counters first seen with a value (history read on jobwatch's first start,
    # a job added by a reload) count as having just counted: increase() cannot
    # see what a series already held when it appeared.
    #
    # Thresholds you may tune (keep the tests in alerts/tests/ in step):
    #   JobwatchJobStale               for: 2m   (jobwatch_job_stale already waits
    #                                  stale_multiple periods plus grace; the 2m
    #                                  rides out one failed scrape of the host that
    #                                  ran a cluster job)
    #   JobwatchJobOverlapping         for: 0m;  counted overlaps stay alerting for
    #                                  10m and for the job's period (looked back at
    #                                  most 1d, in 5m steps: the [1d:5m] subquery)
    #   JobwatchJobSkippingRepeatedly  consecutive skips >= 3, for: 0m; cluster jobs
    #                                  only once no host succeeded for 1.5 periods
    #   JobwatchJobFailing             consecutive failures >= 2, for: 0m
    #   JobwatchJobRunningTooLong      run age > period, for: 1m
    #   JobwatchJobDuplicateRuns       as the counted overlaps, for: 0m
    #   JobwatchJobMissedRun           consecutive missed runs >= 1, for: 2m;
    #                                  cluster jobs only when missed on every
    #                                  instance that reports them
    #   JobwatchJobUnexpectedRuns      a run when none was due in the last 1h,
    #                                  for: 0m (a counter first seen with a
    #                                  value does not fire)
    #   JobwatchJobLockLost            a shared lock lost in the last hour, for: 0m
    #   JobwatchLockStale              holder known dead, for: 5m
    #   JobwatchLockWithoutExpiry      Redis key without TTL, for: 2m
    #   JobwatchLockExpiringWhileRunning  lease under 60s and under half its
    #                                  longest in 15m while a run is in
    #                                  progress, for: 0m
    #   JobwatchLockHeldWithoutRun     held longer than the timeout (or 2
    #                                  periods) with no run that started by
    #                                  then (+1m), for: 5m
    #   JobwatchJobTimeoutTooTight     timeout < 1.5 x P99 of the last 100
    #                                  durations, at least 20 runs, for: 15m
    #   JobwatchDown                   a jobwatch target's up == 0, for: 5m
    #   JobwatchAbsent                 no jobwatch target scraped at all (no up
    #                                  series for the mixin's
    #                                  jobwatchTargetSelector), for: 5m
    #   JobwatchSourceDown             for: 5m
    #   JobwatchScheduledTwice         a command in cron and a timer (or two
    #                                  crontabs), for: 15m
    #   JobwatchConfigReloadFailed     for: 5m
    #   JobwatchStateSaveFailing       failed saves in every 5m window, for: 10m
    #                                  (a single transient failure does not page)
    #   JobwatchHostClockSkew          a host's clock more than 60 s off, as
    #                                  its records show it, for: 10m
    #
    # runbook_url values are the mixin's runbookURLPrefix and the alert's name
    # in lower case. The default prefix is the published runbook:
    #   https://github.com/jobwatch/jobwatch/blob/main/alerts/runbook.md#
  ||| % { cluster: cluster, selector: selector }
