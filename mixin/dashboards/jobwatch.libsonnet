// The jobwatch Grafana dashboard. Its queries select jobwatch's series
// through _config.jobwatchSelector and the dashboard's variables: the
// data source (one), the cluster (label _config.dashboardClusterLabel),
// the scrape jobs, the instances and the jobs (each multi-value, All = .*).
// The cluster variable is hidden when _config.clusterLabel is empty (no
// such label to choose by), and a hidden variable reads the status page's
// URL from jobwatch_status_page_info, for the dashboard's link to it.
local promql = import '../lib/promql.libsonnet';

{
  dashboard(c)::
    local ds = { type: 'prometheus', uid: '${datasource}' };
    local cl = c.dashboardClusterLabel;
    local clusterMatcher = cl + '=~"$cluster"';
    local scrapeJobMatcher = 'job=~"$job"';
    local sel = {
      // jobwatch's series on the selected instances.
      inst: promql.matchers([c.jobwatchSelector, clusterMatcher, scrapeJobMatcher, 'instance=~"$instance"']),
      // a job's series on the selected instances.
      job: promql.matchers([c.jobwatchSelector, clusterMatcher, scrapeJobMatcher, 'instance=~"$instance"', 'job_name=~"$job_name"']),
      // a job's series on every instance: a cluster-scope job is stale only
      // when stale on every instance that reports it, as in JobwatchJobStale.
      clusterJob: promql.matchers([c.jobwatchSelector, clusterMatcher, scrapeJobMatcher, 'job_name=~"$job_name"']),
      // what a job is across instances, as in the rules.
      by: promql.labels(c, ['job_name']),
      // the cluster label first in a grouping, if there is one.
      cp: if c.clusterLabel == '' then '' else c.clusterLabel + ', ',
      build_info: promql.metric(c, 'jobwatch_build_info'),
    };
    // inRange(x): what counter x counted in the dashboard's time range. A
    // series first seen within the range (history read on jobwatch's first
    // start, a job added by a reload) counts with its whole value, which
    // increase() would miss.
    local inRange(x) = '(increase(%(x)s[$__range]) and %(x)s offset $__range) or %(x)s' % { x: x };
    local queryVariable(name, label, selector, labelName) = {
      local q = 'label_values(%s, %s)' % [promql.metric(c, 'jobwatch_job_info', selector), labelName],
      name: name,
      label: label,
      type: 'query',
      datasource: ds,
      definition: q,
      query: {
        query: q,
        refId: 'PrometheusVariableQueryEditor-VariableQuery',
        qryType: 1,
      },
      current: {},
      hide: 0,
      includeAll: true,
      allValue: '.*',
      multi: true,
      options: [],
      refresh: 2,
      regex: '',
      sort: 1,
    };
    // One data source: every query runs on it. (Grafana can only repeat
    // panels over a multi-value data source variable, not query several.)
    local datasourceVariable = {
      name: 'datasource',
      label: 'Data source',
      type: 'datasource',
      query: 'prometheus',
      current: {
        selected: false,
        text: 'Prometheus',
        value: '${DS_PROMETHEUS}',
      },
      hide: 0,
      includeAll: false,
      multi: false,
      options: [],
      refresh: 1,
      regex: '',
    };
    // Hidden (hide: 2) when there is no cluster label to choose by: its
    // All then matches every series.
    local clusterVariable = queryVariable('cluster', 'Cluster', [], cl) + { hide: if c.clusterLabel == '' then 2 else 0 };
    local scrapeJobVariable = queryVariable('job', 'Scrape job', [clusterMatcher], 'job');
    local instanceVariable = queryVariable('instance', 'Instance', [clusterMatcher, scrapeJobMatcher], 'instance');
    // A variable per label of _config.jobLabels (team, owner), from
    // jobwatch_job_labels_info; All matches a job without the label too.
    local targetMatchers = [clusterMatcher, scrapeJobMatcher, 'instance=~"$instance"'];
    local labelVariables = [
      queryVariable(l, std.asciiUpper(l[0]) + l[1:], targetMatchers, l) {
        local q = 'label_values(%s, %s)' % [promql.metric(c, 'jobwatch_job_labels_info', targetMatchers), l],
        definition: q,
        query+: { query: q },
      }
      for l in c.jobLabels
    ];
    // The jobs whose labels match the label variables: those of
    // jobwatch_job_labels_info, and those of a jobwatch whose config has no
    // labels (no labels info at all). Its All is the jobs listed, not
    // every job, so that the panels show the chosen team's jobs.
    local labelMatchers = targetMatchers + ['%s=~"$%s"' % [l, l] for l in c.jobLabels];
    local jobVariable =
      if std.length(c.jobLabels) == 0 then queryVariable('job_name', 'Job', targetMatchers, 'job_name')
      else queryVariable('job_name', 'Job', targetMatchers, 'job_name') {
        local q = 'query_result(group by (%s) (%s) or on(%s) group by (%s) (%s unless on(%s) %s))' % [
          sel.by,
          promql.metric(c, 'jobwatch_job_labels_info', labelMatchers),
          sel.by,
          sel.by,
          promql.metric(c, 'jobwatch_job_info', targetMatchers),
          sel.by,
          promql.metric(c, 'jobwatch_job_labels_info', targetMatchers),
        ],
        definition: q,
        query+: { query: q, qryType: 3 },
        regex: '/job_name="([^"]*)"/',
        allValue: null,
      };
    // The status page's URL (jobwatch --web.external-url), one value, for
    // the dashboard's link; empty when no jobwatch selected has the flag.
    local statusPageVariable = {
      local q = 'label_values(%s, url)' % promql.metric(c, 'jobwatch_status_page_info', [clusterMatcher, scrapeJobMatcher, 'instance=~"$instance"']),
      name: 'status_page',
      label: 'Status page',
      type: 'query',
      datasource: ds,
      definition: q,
      query: {
        query: q,
        refId: 'PrometheusVariableQueryEditor-VariableQuery',
        qryType: 1,
      },
      current: {},
      hide: 2,
      includeAll: false,
      multi: false,
      options: [],
      refresh: 2,
      regex: '',
      sort: 1,
    };
    {
      __inputs: [
        {
          name: 'DS_PROMETHEUS',
          label: 'Prometheus',
          description: 'The Prometheus that scrapes jobwatch',
          type: 'datasource',
          pluginId: 'prometheus',
          pluginName: 'Prometheus',
        },
      ],
      __elements: {},
      __requires: [
        {
          type: 'grafana',
          id: 'grafana',
          name: 'Grafana',
          // schemaVersion 38 is Grafana 10.0's.
          version: '10.0.0',
        },
        {
          type: 'datasource',
          id: 'prometheus',
          name: 'Prometheus',
          version: '1.0.0',
        },
        {
          type: 'panel',
          id: 'stat',
          name: 'Stat',
          version: '',
        },
        {
          type: 'panel',
          id: 'table',
          name: 'Table',
          version: '',
        },
        {
          type: 'panel',
          id: 'timeseries',
          name: 'Time series',
          version: '',
        },
      ],
      annotations: {
        list: [
          {
            builtIn: 1,
            datasource: {
              type: 'grafana',
              uid: '-- Grafana --',
            },
            enable: true,
            hide: true,
            iconColor: 'rgba(0, 211, 255, 1)',
            name: 'Annotations & Alerts',
            type: 'dashboard',
          },
        ],
      },
      description: 'Scheduled jobs watched by jobwatch: staleness, durations against period and timeout, skips, overlaps, runs in progress, source health.',
      editable: true,
      fiscalYearStartMonth: 0,
      graphTooltip: 1,
      id: null,
      links: [
        {
          title: 'Status page',
          type: 'link',
          url: '${status_page}',
          tooltip: "jobwatch's own status page: which jobs are late, running, what their last runs did (needs jobwatch --web.external-url)",
          icon: 'dashboard',
          asDropdown: false,
          includeVars: false,
          keepTime: false,
          targetBlank: true,
          tags: [],
        },
      ],
      liveNow: false,
      panels: [
        {
          type: 'row',
          title: 'Overview',
          id: 1,
          collapsed: false,
          gridPos: {
            h: 1,
            w: 24,
            x: 0,
            y: 0,
          },
          panels: [],
        },
        {
          type: 'stat',
          title: 'Stale jobs',
          description: 'Jobs past their deadline: more than their stale multiple of periods without success (jobwatch_job_stale). A cluster-scope job counts once, and only when it is stale on every instance that reports it, as JobwatchJobStale fires.',
          id: 2,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 0,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: |||
                count(
                  (jobwatch_job_stale{%(job)s} == 1 unless ignoring(scope) jobwatch_job_info{%(job)s, scope="cluster"})
                  or
                  (
                      min by (%(by)s) (jobwatch_job_stale{%(clusterJob)s} and ignoring(scope) jobwatch_job_info{%(clusterJob)s, scope="cluster"}) == 1
                    and on(%(by)s)
                      jobwatch_job_info{%(job)s}
                  )
                )
              ||| % sel,
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          title: 'Failing jobs',
          description: 'Jobs whose last two or more runs failed.',
          id: 3,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 4,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'count(jobwatch_job_consecutive_failures{%(job)s} >= 2)' % sel,
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          title: 'Runs in progress',
          description: 'Runs of the selected jobs in progress now, on all selected instances.',
          id: 4,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 8,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum(jobwatch_job_running{%(job)s})' % sel,
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1000000,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          title: 'Overlaps in range',
          description: "Runs that started while another run of the same job was in progress, in the dashboard's time range.",
          id: 5,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 12,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum(%s)' % inRange('jobwatch_job_overlaps_total{%(job)s}' % sel),
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          title: 'Sources down',
          description: 'Sources jobwatch cannot read now (jobwatch_source_up == 0).',
          id: 6,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 16,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'count(jobwatch_source_up{%(inst)s} == 0)' % sel,
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'stat',
          title: 'Config reload failed',
          description: 'jobwatch instances whose last configuration reload failed.',
          id: 7,
          datasource: ds,
          gridPos: {
            h: 4,
            w: 4,
            x: 20,
            y: 1,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'count(jobwatch_config_last_reload_successful{%(inst)s} == 0)' % sel,
              legendFormat: '__auto',
              range: false,
              instant: true,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'none',
              noValue: '0',
              thresholds: {
                mode: 'absolute',
                steps: [
                  {
                    color: 'green',
                    value: null,
                  },
                  {
                    color: 'red',
                    value: 1,
                  },
                ],
              },
            },
            overrides: [],
          },
          options: {
            reduceOptions: {
              calcs: ['lastNotNull'],
              fields: '',
              values: false,
            },
            colorMode: 'background',
            graphMode: 'none',
            textMode: 'value',
            justifyMode: 'auto',
            orientation: 'auto',
          },
        },
        {
          type: 'table',
          title: 'Jobs',
          description: "One row per job and jobwatch instance, as of the end of the time range. Last duration / period above 1 means runs no longer fit their period. Stale is the alert's view: for a cluster-scope job, stale on every instance that reports it (shown on each of its rows). Counts in range include what a series held when first seen in the range.",
          id: 8,
          datasource: ds,
          gridPos: {
            h: 9,
            w: 24,
            x: 0,
            y: 5,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_seconds_since_last_success{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_last_duration_seconds{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_period_seconds{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'D',
              datasource: ds,
              expr: 'jobwatch_job_last_duration_seconds{%(job)s} / (jobwatch_job_period_seconds{%(job)s} > 0)' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'E',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_running{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'F',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_consecutive_skips{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'G',
              datasource: ds,
              expr: 'sum without (reason) (%s)' % inRange('jobwatch_job_skips_total{%(job)s}' % sel),
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'H',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_consecutive_failures{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'I',
              datasource: ds,
              expr: 'sum without (result) (%s)' % inRange('jobwatch_job_runs_total{%(job)s, result!="success"}' % sel),
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'J',
              datasource: ds,
              expr: |||
                sum without () (jobwatch_job_stale{%(job)s} unless ignoring(scope) jobwatch_job_info{%(job)s, scope="cluster"})
                or
                (
                    (jobwatch_job_stale{%(job)s} and ignoring(scope) jobwatch_job_info{%(job)s, scope="cluster"}) * 0
                  + on(%(by)s) group_left
                    min by (%(by)s) (jobwatch_job_stale{%(clusterJob)s} and ignoring(scope) jobwatch_job_info{%(clusterJob)s, scope="cluster"})
                )
              ||| % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'K',
              datasource: ds,
              expr: 'sum without () (%s)' % inRange('jobwatch_job_missed_runs_total{%(job)s}' % sel),
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'L',
              datasource: ds,
              expr: 'sum without () (jobwatch_job_next_run_timestamp_seconds{%(job)s}) * 1000' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                  job: true,
                },
                indexByName: {
                  job_name: 0,
                  instance: 1,
                  'Value #J': 2,
                  'Value #A': 3,
                  'Value #B': 4,
                  'Value #C': 5,
                  'Value #D': 6,
                  'Value #E': 7,
                  'Value #F': 8,
                  'Value #G': 9,
                  'Value #H': 10,
                  'Value #I': 11,
                  'Value #K': 12,
                  'Value #L': 13,
                },
                renameByName: {
                  job_name: 'Job',
                  instance: 'Instance',
                  'Value #A': 'Since last success',
                  'Value #B': 'Last duration',
                  'Value #C': 'Period',
                  'Value #D': 'Last duration / period',
                  'Value #E': 'Running now',
                  'Value #F': 'Consecutive skips',
                  'Value #G': 'Skips in range',
                  'Value #H': 'Consecutive failures',
                  'Value #I': 'Failures in range',
                  'Value #J': 'Stale',
                  'Value #K': 'Missed in range',
                  'Value #L': 'Next run',
                },
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
                cellOptions: {
                  type: 'auto',
                },
                filterable: true,
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byName',
                  options: 'Since last success',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Last duration',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Period',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Last duration / period',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'percentunit',
                  },
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                  {
                    id: 'thresholds',
                    value: {
                      mode: 'absolute',
                      steps: [
                        {
                          color: 'green',
                          value: null,
                        },
                        {
                          color: 'orange',
                          value: 0.8,
                        },
                        {
                          color: 'red',
                          value: 1,
                        },
                      ],
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Running now',
                },
                properties: [
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                  {
                    id: 'thresholds',
                    value: {
                      mode: 'absolute',
                      steps: [
                        {
                          color: 'transparent',
                          value: null,
                        },
                        {
                          color: 'blue',
                          value: 1,
                        },
                        {
                          color: 'red',
                          value: 2,
                        },
                      ],
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Consecutive skips',
                },
                properties: [
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                  {
                    id: 'thresholds',
                    value: {
                      mode: 'absolute',
                      steps: [
                        {
                          color: 'transparent',
                          value: null,
                        },
                        {
                          color: 'orange',
                          value: 1,
                        },
                        {
                          color: 'red',
                          value: 3,
                        },
                      ],
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Skips in range',
                },
                properties: [
                  {
                    id: 'decimals',
                    value: 0,
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Consecutive failures',
                },
                properties: [
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                  {
                    id: 'thresholds',
                    value: {
                      mode: 'absolute',
                      steps: [
                        {
                          color: 'transparent',
                          value: null,
                        },
                        {
                          color: 'orange',
                          value: 1,
                        },
                        {
                          color: 'red',
                          value: 2,
                        },
                      ],
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Failures in range',
                },
                properties: [
                  {
                    id: 'decimals',
                    value: 0,
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Stale',
                },
                properties: [
                  {
                    id: 'mappings',
                    value: [
                      {
                        type: 'value',
                        options: {
                          '0': {
                            text: 'ok',
                            color: 'green',
                            index: 0,
                          },
                          '1': {
                            text: 'STALE',
                            color: 'red',
                            index: 1,
                          },
                        },
                      },
                    ],
                  },
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Next run',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'dateTimeAsIso',
                  },
                ],
              },
            ],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
            footer: {
              show: false,
              reducer: ['sum'],
              fields: '',
            },
            sortBy: [
              {
                displayName: 'Stale',
                desc: true,
              },
            ],
          },
        },
        {
          type: 'row',
          title: 'Per job',
          id: 9,
          collapsed: false,
          gridPos: {
            h: 1,
            w: 24,
            x: 0,
            y: 14,
          },
          panels: [],
        },
        {
          type: 'timeseries',
          title: 'Duration against period and timeout',
          description: "Duration of each job's last finished run, with its period and timeout: a duration that reaches the period overlaps or skips the next run; one that reaches the timeout is killed.",
          id: 10,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 0,
            y: 15,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'jobwatch_job_last_duration_seconds{%(job)s}' % sel,
              legendFormat: '{{job_name}} last duration ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'max by (%(cp)sjob_name) (jobwatch_job_period_seconds{%(job)s})' % sel,
              legendFormat: '{{job_name}} period',
              range: true,
              instant: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: 'max by (%(cp)sjob_name) (jobwatch_job_timeout_seconds{%(job)s})' % sel,
              legendFormat: '{{job_name}} timeout',
              range: true,
              instant: false,
            },
            {
              refId: 'D',
              datasource: ds,
              // The duration histogram is native (one series, Prometheus
              // with native histograms on) or classic (_sum and _count
              // series): each side of the or is empty in the other form.
              expr: |||
                (
                    sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_duration_seconds_sum{%(job)s}[$__rate_interval]))
                  /
                    sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_duration_seconds_count{%(job)s}[$__rate_interval]))
                )
                or
                (
                    histogram_sum(sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_duration_seconds{%(job)s}[$__rate_interval])))
                  /
                    histogram_count(sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_duration_seconds{%(job)s}[$__rate_interval])))
                )
              ||| % sel,
              legendFormat: '{{job_name}} mean duration ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'E',
              datasource: ds,
              // The 90th percentile of the runs that ended: from the native
              // buckets, or from the classic ones
              // (--metrics.classic-duration-buckets).
              expr: |||
                histogram_quantile(0.9, sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_duration_seconds{%(job)s}[$__rate_interval])))
                or
                histogram_quantile(0.9, sum by (%(cp)sjob_name, instance, le) (increase(jobwatch_job_duration_seconds_bucket{%(job)s}[$__rate_interval])))
              ||| % sel,
              legendFormat: '{{job_name}} p90 duration ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byRegexp',
                  options: '.* (period|timeout)$',
                },
                properties: [
                  {
                    id: 'custom.lineStyle',
                    value: {
                      fill: 'dash',
                      dash: [10, 10],
                    },
                  },
                  {
                    id: 'custom.fillOpacity',
                    value: 0,
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'Time since last success against stale deadline',
          description: 'Seconds since each job last succeeded, and the stale multiple of its period after which JobwatchJobStale fires.',
          id: 11,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 12,
            y: 15,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'jobwatch_job_seconds_since_last_success{%(job)s}' % sel,
              legendFormat: '{{job_name}} since success ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'max by (%(cp)sjob_name) (jobwatch_job_seconds_since_last_success{%(job)s} + (jobwatch_job_deadline_timestamp_seconds{%(job)s} - time()))' % sel,
              legendFormat: '{{job_name}} stale after',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 's',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byRegexp',
                  options: '.* stale after$',
                },
                properties: [
                  {
                    id: 'custom.lineStyle',
                    value: {
                      fill: 'dash',
                      dash: [10, 10],
                    },
                  },
                  {
                    id: 'color',
                    value: {
                      mode: 'fixed',
                      fixedColor: 'red',
                    },
                  },
                  {
                    id: 'custom.fillOpacity',
                    value: 0,
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'Skips by reason, lost locks, overlaps, duplicate, missed and unexpected runs',
          description: 'Runs skipped, by reason (locked: the previous run or another host still held the lock; lock_unavailable: the shared lock could not be reached), shared locks lost while a run went on, runs that overlapped another, and duplicate runs for one slot, per interval.',
          id: 12,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 0,
            y: 23,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance, reason) (increase(jobwatch_job_skips_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} skips: {{reason}} ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'L',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance, lock) (increase(jobwatch_job_lock_lost_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} lost its {{lock}} lock ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_overlaps_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} overlaps ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance, kind) (increase(jobwatch_job_duplicate_runs_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} duplicates {{kind}} ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'D',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_missed_runs_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} missed ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'E',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, instance) (increase(jobwatch_job_unexpected_runs_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} unexpected ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'bars',
                lineWidth: 1,
                fillOpacity: 80,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'Runs by result',
          description: 'Finished runs per interval by result: success, failure, timeout, lost (never seen ending), too_short, unknown (ran and ended, nothing logged how: a cron job at -L 1, grey).',
          id: 13,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 12,
            y: 23,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum by (%(cp)sjob_name, result) (increase(jobwatch_job_runs_total{%(job)s}[$__rate_interval]))' % sel,
              legendFormat: '{{job_name}} {{result}}',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'bars',
                lineWidth: 1,
                fillOpacity: 80,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'normal',
                  group: 'A',
                },
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byRegexp',
                  options: '.* success$',
                },
                properties: [
                  {
                    id: 'color',
                    value: {
                      mode: 'fixed',
                      fixedColor: 'green',
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byRegexp',
                  options: '.* (failure|timeout|lost|too_short)$',
                },
                properties: [
                  {
                    id: 'color',
                    value: {
                      mode: 'fixed',
                      fixedColor: 'red',
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byRegexp',
                  options: '.* unknown$',
                },
                properties: [
                  {
                    id: 'color',
                    value: {
                      mode: 'fixed',
                      fixedColor: 'text',
                    },
                  },
                ],
              },
            ],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'Runs in progress',
          description: 'Runs in progress over time: more than one for one job (or, for a cluster job, across instances) is an overlap.',
          id: 14,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 0,
            y: 31,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'jobwatch_job_running{%(job)s}' % sel,
              legendFormat: '{{job_name}} ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'table',
          title: 'Runs in progress now, by host and PID',
          description: 'Each run in progress at the end of the time range: where it runs, its PID, when it started and for how long.',
          id: 15,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 12,
            y: 31,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'jobwatch_job_run_start_timestamp_seconds{%(job)s} * 1000' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'time() - jobwatch_job_run_start_timestamp_seconds{%(job)s}' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: '(time() - jobwatch_job_run_start_timestamp_seconds{%(job)s}) / ignoring(host, pid) group_left() (jobwatch_job_period_seconds{%(job)s} > 0)' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                  job: true,
                },
                indexByName: {
                  job_name: 0,
                  host: 1,
                  pid: 2,
                  instance: 3,
                  'Value #A': 4,
                  'Value #B': 5,
                  'Value #C': 6,
                },
                renameByName: {
                  job_name: 'Job',
                  instance: 'Instance',
                  host: 'Host',
                  pid: 'PID',
                  'Value #A': 'Started',
                  'Value #B': 'Running for',
                  'Value #C': 'Running for / period',
                },
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
                cellOptions: {
                  type: 'auto',
                },
                filterable: true,
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byName',
                  options: 'Started',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'dateTimeAsIso',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Running for',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Running for / period',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 'percentunit',
                  },
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-background',
                    },
                  },
                  {
                    id: 'thresholds',
                    value: {
                      mode: 'absolute',
                      steps: [
                        {
                          color: 'transparent',
                          value: null,
                        },
                        {
                          color: 'red',
                          value: 1,
                        },
                      ],
                    },
                  },
                ],
              },
            ],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
            footer: {
              show: false,
              reducer: ['sum'],
              fields: '',
            },
            sortBy: [
              {
                displayName: 'Running for',
                desc: true,
              },
            ],
          },
        },
        {
          type: 'table',
          title: 'Locks',
          description: "What the locks source sees of each job's locks (docs/locks.md): held or free, who holds it and whether that process or connection is alive, for how long, and a Redis lease's time left. A lock held by a dead holder makes every run skip (JobwatchLockStale).",
          id: 20,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 24,
            x: 0,
            y: 39,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum without () (jobwatch_lock_held{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'sum without () (jobwatch_lock_holder_alive{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: 'sum without () (jobwatch_lock_held_seconds{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'D',
              datasource: ds,
              expr: 'sum without () (jobwatch_lock_ttl_seconds{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
            {
              refId: 'E',
              datasource: ds,
              expr: 'sum without () (jobwatch_lock_holder_info{%(job)s})' % sel,
              format: 'table',
              instant: true,
              range: false,
            },
          ],
          transformations: [
            {
              id: 'merge',
              options: {},
            },
            {
              id: 'organize',
              options: {
                excludeByName: {
                  Time: true,
                  __name__: true,
                  job: true,
                  'Value #E': true,
                },
                indexByName: {
                  job_name: 0,
                  lock: 1,
                  instance: 2,
                  'Value #A': 3,
                  holder: 4,
                  'Value #B': 5,
                  'Value #C': 6,
                  'Value #D': 7,
                },
                renameByName: {
                  job_name: 'Job',
                  lock: 'Lock',
                  instance: 'Instance',
                  holder: 'Holder',
                  'Value #A': 'Held',
                  'Value #B': 'Holder alive',
                  'Value #C': 'Held for',
                  'Value #D': 'Lease left',
                },
              },
            },
          ],
          fieldConfig: {
            defaults: {
              custom: {
                align: 'auto',
                cellOptions: {
                  type: 'auto',
                },
                filterable: true,
              },
            },
            overrides: [
              {
                matcher: {
                  id: 'byName',
                  options: 'Holder alive',
                },
                properties: [
                  {
                    id: 'mappings',
                    value: [
                      {
                        type: 'value',
                        options: {
                          '0': { text: 'dead', color: 'red', index: 0 },
                          '1': { text: 'alive', color: 'green', index: 1 },
                        },
                      },
                    ],
                  },
                  {
                    id: 'custom.cellOptions',
                    value: {
                      type: 'color-text',
                    },
                  },
                ],
              },
              {
                matcher: {
                  id: 'byName',
                  options: 'Held',
                },
                properties: [
                  {
                    id: 'mappings',
                    value: [
                      {
                        type: 'value',
                        options: {
                          '0': { text: 'free', index: 0 },
                          '1': { text: 'held', index: 1 },
                        },
                      },
                    ],
                  },
                ],
              },
              {
                matcher: {
                  id: 'byRegexp',
                  options: 'Held for|Lease left',
                },
                properties: [
                  {
                    id: 'unit',
                    value: 's',
                  },
                ],
              },
            ],
          },
          options: {
            showHeader: true,
            cellHeight: 'sm',
            footer: {
              show: false,
              reducer: ['sum'],
              fields: '',
            },
          },
        },
        {
          type: 'row',
          title: 'Sources and jobwatch',
          id: 16,
          collapsed: false,
          gridPos: {
            h: 1,
            w: 24,
            x: 0,
            y: 47,
          },
          panels: [],
        },
        {
          type: 'timeseries',
          title: 'Source health',
          description: '1 while jobwatch can read the source, 0 while it cannot (JobwatchSourceDown after 5 minutes).',
          id: 17,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 0,
            y: 48,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'jobwatch_source_up{%(inst)s}' % sel,
              legendFormat: '{{source}} {{type}} ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
              min: 0,
              max: 1,
              mappings: [
                {
                  type: 'value',
                  options: {
                    '0': {
                      text: 'down',
                      color: 'red',
                      index: 0,
                    },
                    '1': {
                      text: 'up',
                      color: 'green',
                      index: 1,
                    },
                  },
                },
              ],
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'Source records',
          description: 'Records read per second by source, and those that could not be parsed, named an unknown job, or followed a lost read position.',
          id: 18,
          datasource: ds,
          gridPos: {
            h: 8,
            w: 12,
            x: 12,
            y: 48,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'sum by (source, instance) (rate(jobwatch_source_records_total{%(inst)s}[$__rate_interval]))' % sel,
              legendFormat: '{{source}} records ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'sum by (source, instance) (rate(jobwatch_source_parse_errors_total{%(inst)s}[$__rate_interval]))' % sel,
              legendFormat: '{{source}} parse errors ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'C',
              datasource: ds,
              expr: 'sum by (source, instance) (rate(jobwatch_source_unknown_job_records_total{%(inst)s}[$__rate_interval]))' % sel,
              legendFormat: '{{source}} unknown job ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'D',
              datasource: ds,
              expr: 'sum by (source, instance) (increase(jobwatch_source_position_resets_total{%(inst)s}[$__rate_interval]))' % sel,
              legendFormat: '{{source}} position resets ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
        {
          type: 'timeseries',
          title: 'jobwatch up and config reloads',
          description: 'Whether Prometheus can scrape each jobwatch, and whether its last configuration reload succeeded.',
          id: 19,
          datasource: ds,
          gridPos: {
            h: 6,
            w: 24,
            x: 0,
            y: 56,
          },
          targets: [
            {
              refId: 'A',
              datasource: ds,
              expr: 'up{%(inst)s} and on(instance, job) max_over_time(%(build_info)s[1h])' % sel,
              legendFormat: 'scrape up ({{instance}})',
              range: true,
              instant: false,
            },
            {
              refId: 'B',
              datasource: ds,
              expr: 'jobwatch_config_last_reload_successful{%(inst)s}' % sel,
              legendFormat: 'last reload ok ({{instance}})',
              range: true,
              instant: false,
            },
          ],
          fieldConfig: {
            defaults: {
              unit: 'short',
              custom: {
                drawStyle: 'line',
                lineWidth: 1,
                fillOpacity: 10,
                showPoints: 'never',
                spanNulls: false,
                stacking: {
                  mode: 'none',
                  group: 'A',
                },
              },
              min: 0,
              max: 1,
            },
            overrides: [],
          },
          options: {
            legend: {
              displayMode: 'table',
              placement: 'bottom',
              showLegend: true,
              calcs: ['lastNotNull', 'max'],
            },
            tooltip: {
              mode: 'multi',
              sort: 'desc',
            },
          },
        },
      ],
      refresh: '1m',
      schemaVersion: 38,
      tags: c.dashboardTags,
      templating: { list: [datasourceVariable, clusterVariable, scrapeJobVariable, instanceVariable] + labelVariables + [jobVariable, statusPageVariable] },
      time: {
        from: 'now-24h',
        to: 'now',
      },
      timepicker: {},
      timezone: '',
      title: c.dashboardTitle,
      uid: c.dashboardUID,
      version: 1,
      weekStart: '',
    },
}
