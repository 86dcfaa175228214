// Package collector renders the job model as Prometheus metrics at scrape
// time. It knows nothing of files, SQL or the journal.
package collector

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/model"
)

const namespace = "jobwatch"

// descInfo names and describes each Desc, for the Handler to build
// families of its own.
var descInfo = map[*prometheus.Desc]descMeta{}

type descMeta struct {
	name, help string
	labels     []string
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	fq := prometheus.BuildFQName(namespace, "", name)
	d := prometheus.NewDesc(fq, help, labels, nil)
	descInfo[d] = descMeta{fq, help, labels}
	return d
}

var (
	jobLabels = []string{"job_name"}

	lastSuccessDesc      = desc("job_last_success_timestamp_seconds", "End time of the job's last successful run.", jobLabels...)
	sinceSuccessDesc     = desc("job_seconds_since_last_success", "Seconds since the job's last successful run ended, or since jobwatch first watched it if it never succeeded.", jobLabels...)
	periodDesc           = desc("job_period_seconds", "Expected period of the job: the interval between its last expected run and the next.", jobLabels...)
	staleMultipleDesc    = desc("job_stale_multiple", "How many expected runs without success make the job stale.", jobLabels...)
	staleDesc            = desc("job_stale", "1 when the job has gone longer than its stale multiple of periods without success.", jobLabels...)
	deadlineDesc         = desc("job_deadline_timestamp_seconds", "Time at which the job becomes stale unless it succeeds again.", jobLabels...)
	nextRunDesc          = desc("job_next_run_timestamp_seconds", "Next expected run of the job.", jobLabels...)
	timeoutDesc          = desc("job_timeout_seconds", "Configured timeout of the job's runs.", jobLabels...)
	durationP99Desc      = desc("job_duration_p99_seconds", "99th percentile of the durations of the job's last 100 finished runs.", jobLabels...)
	infoDesc             = desc("job_info", "Configuration of the job; scope is host (every host runs it) or cluster (one host per run).", "job_name", "scope")
	durationDesc         = desc("job_duration_seconds", "Durations of the job's finished runs.", jobLabels...)
	lastDurationDesc     = desc("job_last_duration_seconds", "Duration of the job's last finished run.", jobLabels...)
	lastFailureDesc      = desc("job_last_failure_timestamp_seconds", "End time of the job's last run that did not succeed.", jobLabels...)
	lastExitCodeDesc     = desc("job_last_exit_code", "Exit code of the job's last finished run that reported one.", jobLabels...)
	consecFailuresDesc   = desc("job_consecutive_failures", "Finished runs since the last success that did not succeed.", jobLabels...)
	runsDesc             = desc("job_runs_total", "Finished runs of the job by result: success, failure, timeout, lost, too_short (it succeeded in less than the job's min_duration).", "job_name", "result")
	skipsDesc            = desc("job_skips_total", "Runs of the job that were skipped, by reason: locked (a lock was held), lock_unavailable (the shared lock's server could not be reached), disabled, other, or a reason a regex source declares.", "job_name", "reason")
	lockLostDesc         = desc("job_lock_lost_total", "Shared locks (redis, mysql) that runs of the job lost while they ran.", "job_name", "lock")
	consecSkipsDesc      = desc("job_consecutive_skips", "Skips since the job's last run that actually started.", jobLabels...)
	consecMissedDesc     = desc("job_consecutive_missed_runs", "Expected runs since the job's last run that started (or was skipped) for which no run started within grace (calendar schedules: an every: job has no expected runs to miss).", jobLabels...)
	runningDesc          = desc("job_running", "Runs of the job in progress now.", jobLabels...)
	overlapsDesc         = desc("job_overlaps_total", "Runs that started while another run of the same job was still in progress.", jobLabels...)
	runStartDesc         = desc("job_run_start_timestamp_seconds", "Start time of each run in progress, by host and PID.", "job_name", "host", "pid")
	missedDesc           = desc("job_missed_runs_total", "Expected runs of the job for which no run started within grace.", jobLabels...)
	unexpectedDesc       = desc("job_unexpected_runs_total", "Runs of the job that started when none was due.", jobLabels...)
	duplicateDesc        = desc("job_duplicate_runs_total", "Second and later runs of one expected run: overlap (same host, first still running), double_trigger (same host, after it ended), multi_host (another host, cluster-scope jobs).", "job_name", "kind")
	sourceUpDesc         = desc("source_up", "1 while the source can be read.", "source", "type")
	sourceRecordsDesc    = desc("source_records_total", "Records read from the source.", "source")
	sourceParseErrDesc   = desc("source_parse_errors_total", "Lines, rows or entries of the source that could not be read as records.", "source")
	sourceUnknownJobDesc = desc("source_unknown_job_records_total", "Records of the source about jobs that are not configured, and so ignored.", "source")
	sourceResetsDesc     = desc("source_position_resets_total", "Times the source's saved position no longer existed and reading went on from the nearest point.", "source")
	sourceLateDesc       = desc("source_late_records_total", "Records of the source that came after their job had decided past their time (later than the source's late window): applied where they could be, without reopening a decided slot.", "source")
	retiredDesc          = desc("job_retired_timestamp_seconds", "When the discovered job disappeared from the host (host mode): it is expected no more, and only its history is exported, until discovery.retired_retention has passed.", jobLabels...)
	sourceBehindDesc     = desc("source_decisions_behind_seconds", "How far behind now the source's watermark is: the verdicts (missed, overlapping and duplicate runs, runs closed at their timeout) of the jobs it reports wait until it has read past their time. A source of runs only, once it has reported.", "source")
)

// Viewer gives the state to render; *model.Tracker is one.
type Viewer interface {
	View() ([]model.JobView, []model.SourceView)
}

// SourcesViewer gives the sources alone, sorted by name, without copying
// the jobs; a collector of NewSources uses it when its Viewer has it.
type SourcesViewer interface {
	Sources() []*model.SourceView
}

// Collector renders a job model.
type Collector struct {
	model Viewer
	now   func() time.Time
	parts parts
	opts  Options
}

// Options change what a Collector or Handler renders.
type Options struct {
	// ClassicBuckets gives jobwatch_job_duration_seconds its classic
	// buckets (model.DurationBuckets) beside its native ones: 18 series a
	// job more, for a Prometheus that does not ingest native histograms
	// and wants quantiles.
	ClassicBuckets bool
}

// parts are what a Collector renders.
type parts int

const (
	allParts    parts = iota
	sourceParts       // sources and their observations: Handler renders the jobs
)

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector of m; now is the clock ("seconds since" metrics
// are computed at scrape time); opts, the first if any, what it renders
// beyond the defaults.
func New(m Viewer, now func() time.Time, opts ...Options) *Collector {
	if now == nil {
		now = time.Now
	}
	c := &Collector{model: m, now: now}
	if len(opts) > 0 {
		c.opts = opts[0]
	}
	return c
}

// NewSources returns a collector of m's sources and their observations only: the jobs
// are rendered by a Handler.
func NewSources(m Viewer, now func() time.Time) *Collector {
	c := New(m, now)
	c.parts = sourceParts
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.parts != sourceParts {
		for _, d := range jobDescs {
			ch <- d
		}
	}
	for _, d := range []*prometheus.Desc{sourceUpDesc, sourceRecordsDesc, sourceParseErrDesc, sourceUnknownJobDesc, sourceResetsDesc, sourceLateDesc, sourceBehindDesc} {
		ch <- d
	}
	describeObservations(ch)
}

// jobDescs are the families of each job, as collectJob emits them.
var jobDescs = []*prometheus.Desc{
	lastSuccessDesc, sinceSuccessDesc, periodDesc, staleMultipleDesc, staleDesc, deadlineDesc, nextRunDesc,
	timeoutDesc, durationP99Desc, infoDesc, durationDesc, lastDurationDesc, lastFailureDesc, lastExitCodeDesc, consecFailuresDesc,
	runsDesc, skipsDesc, lockLostDesc, consecSkipsDesc, consecMissedDesc, runningDesc, overlapsDesc, runStartDesc, missedDesc, unexpectedDesc, duplicateDesc,
	retiredDesc,
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	if sv, ok := c.model.(SourcesViewer); ok && c.parts == sourceParts {
		for _, s := range sv.Sources() {
			collectSource(ch, s, now)
		}
		return
	}
	jobs, sources := c.model.View()
	if c.parts != sourceParts {
		emit := constSink(func(m prometheus.Metric) { ch <- m })
		for i := range jobs {
			collectJob(emit, &jobs[i], now, c.opts)
		}
	}
	for i := range sources {
		collectSource(ch, &sources[i], now)
	}
}

func collectSource(ch chan<- prometheus.Metric, s *model.SourceView, now time.Time) {
	ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, boolFloat(s.Up), s.Name, s.Type)
	ch <- prometheus.MustNewConstMetric(sourceRecordsDesc, prometheus.CounterValue, float64(s.Records), s.Name)
	ch <- prometheus.MustNewConstMetric(sourceParseErrDesc, prometheus.CounterValue, float64(s.ParseErrors), s.Name)
	ch <- prometheus.MustNewConstMetric(sourceUnknownJobDesc, prometheus.CounterValue, float64(s.UnknownJob), s.Name)
	ch <- prometheus.MustNewConstMetric(sourceResetsDesc, prometheus.CounterValue, float64(s.PositionResets), s.Name)
	ch <- prometheus.MustNewConstMetric(sourceLateDesc, prometheus.CounterValue, float64(s.LateRecords), s.Name)
	if behind, ok := s.DecisionsBehind(now); ok {
		ch <- prometheus.MustNewConstMetric(sourceBehindDesc, prometheus.GaugeValue, behind.Seconds(), s.Name)
	}
	collectObservations(ch, s, now)
}

// sink takes the metrics of a job: as client_golang's const metrics
// (constSink) or as lines of the exposition (lineSink). The slice of label
// values is collectJob's, reused from call to call: a sink keeps the
// values, never the slice.
type sink interface {
	gauge(d *prometheus.Desc, v float64, labelValues ...string)
	// counter: created is when it started counting (zero: unknown), the
	// _created sample of OpenMetrics.
	counter(d *prometheus.Desc, v float64, created time.Time, labelValues ...string)
	// histogram: h's native buckets, and its classic ones
	// (model.DurationBuckets) when classic.
	histogram(d *prometheus.Desc, h *model.Histogram, classic bool, labelValues ...string)
}

// constSink passes each metric on as a const metric.
type constSink func(prometheus.Metric)

func (f constSink) gauge(d *prometheus.Desc, v float64, lvs ...string) {
	f(prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lvs...))
}

func (f constSink) counter(d *prometheus.Desc, v float64, created time.Time, lvs ...string) {
	if created.IsZero() {
		f(prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lvs...))
		return
	}
	f(prometheus.MustNewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, v, created, lvs...))
}

func (f constSink) histogram(d *prometheus.Desc, h *model.Histogram, classic bool, lvs ...string) {
	f(newDurationHistogram(d, h, classic, lvs))
}

// collectJob emits the metrics of one job; Collect and the Handler's
// rendering of a changed job share it.
func collectJob(s sink, j *model.JobView, now time.Time, o Options) {
	// A job's counters count from when jobwatch first knew of the job (its
	// earliest record, or when it was first watched), which is saved: a
	// restart does not move it, so Prometheus 3 places a counter first seen
	// with a value (history read on first start) where it began.
	e := jobSeries{s: s, created: j.FirstWatched.Time(), opts: o}
	e.lv[0] = j.Spec.Name
	e.schedule(j, j.Watch(now), now)
	e.lastRuns(j)
	e.counts(j)
	e.pauses(j)
	e.running(j)
}

// jobSeries emits one job's series through a sink, in the same order from
// job to job. The label values of every call are in one array, the job's
// name first: a slice made for each call would escape through the sink
// interface, an allocation per sample.
type jobSeries struct {
	s       sink
	lv      [3]string
	created time.Time
	opts    Options
}

func (e *jobSeries) gauge(d *prometheus.Desc, v float64) { e.s.gauge(d, v, e.lv[:1]...) }

func (e *jobSeries) counter(d *prometheus.Desc, v uint64) {
	e.s.counter(d, float64(v), e.created, e.lv[:1]...)
}

// counterBy is a counter with a second label.
func (e *jobSeries) counterBy(d *prometheus.Desc, v uint64, label string) {
	e.lv[1] = label
	e.s.counter(d, float64(v), e.created, e.lv[:2]...)
}

// schedule: what the job is, and where it stands against its schedule at
// now. A retired job has no schedule to stand against: it has none of the
// series the alerts judge a job by (staleness, period, deadline, next
// run, timeout), only when it was retired.
func (e *jobSeries) schedule(j *model.JobView, w model.Watch, now time.Time) {
	scope := j.Spec.Scope
	if scope == "" {
		scope = "host"
	}
	e.lv[1] = scope
	e.s.gauge(infoDesc, 1, e.lv[:2]...)
	if !j.LastSuccess.IsZero() {
		e.gauge(lastSuccessDesc, pastUnix(j.LastSuccess.Time()))
	}
	if !j.Retired.IsZero() {
		e.gauge(retiredDesc, pastUnix(j.Retired.Time()))
		return
	}
	e.gauge(sinceSuccessDesc, sinceSeconds(w, now))
	e.gauge(periodDesc, w.Period.Seconds())
	e.gauge(staleMultipleDesc, float64(j.Spec.StaleMultiple))
	e.gauge(staleDesc, boolFloat(w.Stale))
	if !w.Deadline.IsZero() {
		e.gauge(deadlineDesc, futureUnix(w.Deadline))
	}
	if !w.NextRun.IsZero() {
		e.gauge(nextRunDesc, futureUnix(w.NextRun))
	}
	if j.Spec.Timeout > 0 {
		e.gauge(timeoutDesc, j.Spec.Timeout.Seconds())
	}
}

// lastRuns: the durations and the last finished runs.
func (e *jobSeries) lastRuns(j *model.JobView) {
	e.s.histogram(durationDesc, &j.Durations, e.opts.ClassicBuckets, e.lv[:1]...)
	if j.HasLastDuration {
		e.gauge(lastDurationDesc, j.LastDuration)
	}
	if p99, ok := model.DurationQuantile(j.LastDurations(), 0.99); ok {
		e.gauge(durationP99Desc, p99)
	}
	if !j.LastFailure.IsZero() {
		e.gauge(lastFailureDesc, pastUnix(j.LastFailure.Time()))
	}
	if j.HasLastExitCode {
		e.gauge(lastExitCodeDesc, float64(j.LastExitCode))
	}
	if j.Retired.IsZero() { // the runs in a row the alerts count: of a job still expected
		e.gauge(consecFailuresDesc, float64(j.ConsecutiveFailures))
	}
}

// counts: the job's counters. Of those with a series per kind, only the
// results every job has (complete) are there from zero; a series
// of another kind appears when it first counts (docs/metrics.md), which
// keeps a job at about 30 series rather than 14 more, mostly zeros.
func (e *jobSeries) counts(j *model.JobView) {
	o := seriesOrder()
	for _, i := range o.results {
		if n := j.RunCounts[i]; n > 0 || complete(model.Results[i]) {
			e.counterBy(runsDesc, n, string(model.Results[i]))
		}
	}
	for _, i := range o.skipReasons {
		if n := j.SkipCounts[i]; n > 0 {
			e.counterBy(skipsDesc, n, model.SkipReasons[i])
		}
	}
	for _, r := range sortedKeys(j.SkipsDeclared) {
		e.counterBy(skipsDesc, j.SkipsDeclared[r], r)
	}
	for _, i := range o.lockLayers {
		if n := j.LockLostCounts[i]; n > 0 {
			e.counterBy(lockLostDesc, n, model.LockLayers[i])
		}
	}
	// Missed and unexpected runs are counted against a calendar's expected
	// runs: a job of a fixed period has none (they stay at 0), unless it
	// had a calendar before. Overlaps appear when they first count, as
	// the kinds above (JobwatchJobOverlapping sees a series first seen).
	slotted := calendar(j)
	if j.Retired.IsZero() {
		e.gauge(consecSkipsDesc, float64(j.ConsecutiveSkips))
		if slotted || j.ConsecutiveMissed > 0 {
			e.gauge(consecMissedDesc, float64(j.ConsecutiveMissed))
		}
	}
	e.gauge(runningDesc, float64(len(j.Open)))
	if j.Overlaps > 0 {
		e.counter(overlapsDesc, j.Overlaps)
	}
	if slotted || j.Missed > 0 {
		e.counter(missedDesc, j.Missed)
	}
	if slotted || j.Unexpected > 0 {
		e.counter(unexpectedDesc, j.Unexpected)
	}
	for _, i := range o.dupKinds {
		if n := j.DupCounts[i]; n > 0 {
			e.counterBy(duplicateDesc, n, model.DuplicateKinds[i])
		}
	}
}

// running: a series per run in progress.
func (e *jobSeries) running(j *model.JobView) {
	for k := range j.Open {
		r := &j.Open[k]
		// Two open runs can share host and PID only when the PID is unknown
		// or reused: one series, the earliest start (Open is sorted).
		if k > 0 && r.Host == j.Open[k-1].Host && r.PID == j.Open[k-1].PID {
			continue
		}
		e.lv[1], e.lv[2] = r.Host, strconv.Itoa(r.PID)
		e.s.gauge(runStartDesc, pastUnix(r.Start.Time()), e.lv[:3]...)
	}
}

// complete reports whether the runs_total series of result r is there
// from zero: success and failure, the two every job's runs end in, so that
// increase() over them (the dashboard's runs and failure ratio) counts a
// job's first failure. The rare results (timeout, lost, too_short,
// unknown) appear when they first count, as skip reasons, lock layers and
// duplicate kinds do: the alerts that judge those (JobwatchJobLockLost,
// JobwatchJobDuplicateRuns) also fire on a series first seen with a value.
func complete(r model.Result) bool { return r == model.Success || r == model.Failure }

// sortedKeys are m's keys in order: nil, and no allocation, when m is empty.
func sortedKeys(m map[string]uint64) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// seriesOrder is the order, by name, of the label values of the families
// with a series per result, skip reason, lock layer or kind of duplicate:
// collectJob emits them in the order a registry sorts them, which spares a
// lineSink sorting them for every job.
var seriesOrder = sync.OnceValue(func() (o struct{ results, skipReasons, lockLayers, dupKinds []int }) {
	o.results = byName(model.Results)
	o.skipReasons = byName(model.SkipReasons)
	o.lockLayers = byName(model.LockLayers)
	o.dupKinds = byName(model.DuplicateKinds)
	return o
})

// byName is the indexes of names in the order of the names.
func byName[S ~string](names []S) []int {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(string(names[a]), string(names[b])) })
	return order
}

// Times are written in whole seconds (docs/metrics.md, "Times in whole seconds"), as
// kube-state-metrics and node_exporter write event times: their fraction
// was a tenth of the exposition's bytes. The model, the status page and
// the JSON API keep their full precision, and so do durations here.

// pastUnix is a time something happened (a run's start or end, a
// retirement) in whole seconds: the second it happened in, as
// time.Time.Unix counts.
func pastUnix(t time.Time) float64 { return float64(t.Unix()) }

// futureUnix is a time something is due (a deadline, a next run) in whole
// seconds: the first not before it, so that a deadline is never written
// earlier than it falls.
func futureUnix(t time.Time) float64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return float64(s)
}

// secondsSince is the whole seconds from t to now: now's second less t's
// (pastUnix), never below 0, so that a "seconds since" series is the
// scrape's second less the timestamp series of the same time.
func secondsSince(t, now time.Time) float64 { return float64(max(now.Unix()-t.Unix(), 0)) }

// sinceSeconds is w's seconds since the last success (or since first
// watched), at now, in whole seconds (secondsSince).
func sinceSeconds(w model.Watch, now time.Time) float64 {
	return secondsSince(now.Add(-w.SinceSuccess), now)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
