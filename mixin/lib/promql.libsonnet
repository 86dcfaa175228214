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
}
