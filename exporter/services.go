package exporter

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"jobwatch/config"
	"jobwatch/discover"
	"jobwatch/model"
	"jobwatch/sources/checkin"
)

// checkinSpec is the check-in source as the model knows it.
var checkinSpec = model.SourceSpec{Name: checkin.Type, Type: checkin.Type, Identity: checkin.Type, Runs: true, LateWindow: checkin.LateWindow}

// attachCheckins opens the check-in receiver the first time a config turns
// check-ins on (its spool lives in the state directory, opened by then),
// sets the jobs it accepts, and adds its source to g. The receiver lives as
// long as jobwatch: a reload that turns check-ins off makes it refuse every
// job.
func (e *Exporter) attachCheckins(g *generation) error {
	c := g.cfg.Checkins
	if !c.Enabled {
		if r := e.receiver.Load(); r != nil {
			r.SetJobs(nil)
		}
		return nil
	}
	if e.receiver.Load() == nil {
		r, err := checkin.OpenReceiver(checkin.Options{
			Dir:      filepath.Join(e.opts.StateDir, "checkins"),
			MaxBody:  int64(c.MaxBody),
			Now:      e.opts.Now,
			Logger:   e.opts.Logger.With("source", checkin.Type),
			OnReject: func(reason string) { e.checkinRejects.WithLabelValues(reason).Inc() },
		})
		if err != nil {
			return err
		}
		e.receiver.Store(r)
	}
	r := e.receiver.Load()
	r.SetMaxBody(int64(c.MaxBody))
	r.SetJobs(c.Accepted(g.cfg.Jobs))
	g.sources = append(g.sources, r.Source())
	return nil
}

// CheckinHandler answers /ping/ (docs/checkins.md): 404 while check-ins are
// not enabled.
func (e *Exporter) CheckinHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := e.receiver.Load()
		if rec == nil {
			e.checkinRejects.WithLabelValues(checkin.RejectUnknownJob).Inc()
			http.Error(w, "check-ins are not enabled (checkins: in jobwatch.yml)", http.StatusNotFound)
			return
		}
		rec.ServeHTTP(w, r)
	})
}

// View is the state as last saved: what scrapes and the status page show.
func (e *Exporter) View() ([]model.JobView, []model.SourceView) { return e.saved.Load().View() }

// discoverLoop looks at the host's crontabs and timers every interval of
// the config's discovery block, until ctx is done.
func (e *Exporter) discoverLoop(ctx context.Context, cfg *config.Config) {
	d := cfg.Discovery
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.discoverOnce(d.Root)
		t.Reset(d.Interval.D())
	}
}

func (e *Exporter) discoverOnce(root string) {
	data, err := os.ReadFile(e.opts.ConfigFile)
	if err != nil {
		e.discoveryErrors.Inc()
		e.opts.Logger.Warn("discovery: reading the config", "err", err)
		return
	}
	watched, err := discover.WatchedFromYAML(data)
	if err != nil {
		e.discoveryErrors.Inc()
		e.opts.Logger.Warn("discovery: reading the config", "err", err)
		return
	}
	p99 := map[string]time.Duration{}
	jobs, _ := e.View()
	for i := range jobs {
		if q, ok := model.DurationQuantile(jobs[i].LastDurations(), 0.99); ok {
			p99[jobs[i].Spec.Name] = time.Duration(q * float64(time.Second))
		}
	}
	rep, err := discover.Scan(root, watched, discover.Options{Now: e.opts.Now(), P99: p99})
	if err != nil {
		e.discoveryErrors.Inc()
		e.opts.Logger.Warn("discovery failed", "root", root, "err", err)
		return
	}
	e.discoveryFindings.Reset()
	for _, c := range rep.Counts() {
		e.discoveryFindings.WithLabelValues(c.Kind, string(c.Severity)).Set(float64(c.N))
	}
	e.discoveryUnwatched.Set(float64(len(rep.Unwatched)))
	e.discoveryLast.Set(float64(e.opts.Now().Unix()))
}

// serviceMetrics are the metrics of the check-ins and of discovery.
func (e *Exporter) newServiceMetrics() []prometheus.Collector {
	e.checkinRejects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobwatch_checkins_rejected_total", Help: "Check-ins refused, by reason (docs/checkins.md)."}, []string{"reason"})
	for _, r := range checkin.RejectReasons {
		e.checkinRejects.WithLabelValues(r)
	}
	e.discoveryFindings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_findings", Help: "Scheduling mistakes the last discovery found on the host, by kind and severity (docs/discover.md)."},
		[]string{"kind", "severity"})
	e.discoveryUnwatched = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_unwatched_jobs", Help: "Scheduled jobs on the host (cron lines, timers) that no configured job watches, as the last discovery found them."})
	e.discoveryLast = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_last_run_timestamp_seconds", Help: "Time of the last discovery that succeeded."})
	e.discoveryErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobwatch_discovery_errors_total", Help: "Discoveries that failed (the config or the host could not be read)."})
	statusPage := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobwatch_status_page_info", Help: "The status page's URL (--web.external-url), for alerts to link a job's page; always 1, absent without the flag."},
		[]string{"url"})
	if e.opts.StatusPageURL != "" {
		statusPage.WithLabelValues(e.opts.StatusPageURL).Set(1)
	}
	return []prometheus.Collector{e.checkinRejects, discoveryCollector{e}, statusPage}
}

// discoveryCollector shows discovery's metrics only while it is enabled.
type discoveryCollector struct{ e *Exporter }

func (d discoveryCollector) Describe(ch chan<- *prometheus.Desc) {
	d.e.discoveryFindings.Describe(ch)
	d.e.discoveryUnwatched.Describe(ch)
	d.e.discoveryLast.Describe(ch)
	d.e.discoveryErrors.Describe(ch)
}

func (d discoveryCollector) Collect(ch chan<- prometheus.Metric) {
	if !d.e.discoveryOn.Load() {
		return
	}
	d.e.discoveryFindings.Collect(ch)
	d.e.discoveryUnwatched.Collect(ch)
	d.e.discoveryLast.Collect(ch)
	d.e.discoveryErrors.Collect(ch)
}
