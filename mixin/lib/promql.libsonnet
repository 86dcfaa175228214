// Helpers that build PromQL from the mixin's _config.
{
  // matchers joins the non-empty label matchers with ', '.
  matchers(list):: std.join(', ', std.filter(function(m) m != '', list)),

  // metric is a series selector: the metric name with the jobwatch
  // selector and the extra matchers, or the bare name if there are none.
  metric(c, name, extra=[])::
    local m = self.matchers([c.jobwatchSelector] + extra);
    if m == '' then name else name + '{' + m + '}',

  // labels lists the cluster label (if set) and the given labels, as in
  // by (...) and on(...).
  labels(c, list):: std.join(', ', std.filter(function(l) l != '', [c.clusterLabel] + list)),

  // selectors maps each metric name to its selector, for use with
  // std.format's %(name)s.
  selectors(c, names):: { [n]: $.metric(c, n) for n in names },

  // templateSelector is the jobwatch selector as a prefix of the label
  // matchers in an annotation's printf "...{%s}" query: quotes escaped for
  // the template's string, percent signs for printf.
  templateSelector(c)::
    if c.jobwatchSelector == '' then ''
    else std.strReplace(std.strReplace(c.jobwatchSelector, '%', '%%'), '"', '\\"') + ',',

  // statusURL is a job alert's link to the job's page on the status page of
  // the jobwatch that reports it (or of any, for a cluster job), empty when
  // jobwatch was not given --web.external-url.
  statusURL(c)::
    '{{ with printf "jobwatch_status_page_info{%s%%s}" (or (and $labels.instance (printf "instance=%%q" $labels.instance)) "") | query }}{{ (. | first).Labels.url }}/job/{{ $labels.job_name }}{{ end }}' % [self.templateSelector(c)],

  // runbook is an alert's runbook_url.
  runbook(c, alert):: c.runbookURLPrefix + std.asciiLower(alert),

  // withJobLabels gives a job alert's expression the labels c.jobLabels
  // names of its job's jobwatch_job_labels_info (x * 1 keeps the value).
  // One series per job is joined: the labels info (topk: one of the
  // instances that report the job), or else its jobwatch_job_info, which
  // every job has, so that an alert of a job without labels is kept as it
  // is. group_left copies only the listed labels.
  withJobLabels(c, expr)::
    if std.length(c.jobLabels) == 0 then expr
    else |||
      (
      %(expr)s)
      * on(%(job)s) group_left(%(keys)s)
      (
          topk by (%(job)s) (1, %(labels)s)
        or on(%(job)s)
          group by (%(job)s) (%(info)s)
      )
    ||| % {
      expr: std.join('\n', ['  ' + l for l in std.split(std.rstripChars(expr, '\n'), '\n')]) + '\n',
      job: $.labels(c, ['job_name']),
      keys: std.join(', ', c.jobLabels),
      labels: $.metric(c, 'jobwatch_job_labels_info'),
      info: $.metric(c, 'jobwatch_job_info'),
    },
}
