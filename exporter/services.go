package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/discover"
	"github.com/jobwatch/jobwatch/internal/labelname"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// service is a registered service (the check-in receiver) as the exporter
// runs it: opened the first time a config turns it on, then kept as long
// as jobwatch.
type service struct {
	typ      sources.ServiceType
	svc      atomic.Pointer[sources.Service]
	counters map[string]*prometheus.CounterVec
}

func (s *service) count(counter, value string) {
	if c := s.counters[counter]; c != nil {
		c.WithLabelValues(value).Inc()
	}
}

// loaded is the open service, or nil.
func (s *service) loaded() sources.Service {
	if p := s.svc.Load(); p != nil {
		return *p
	}
	return nil
}

// newServices makes the registered services' counters; none is opened.
func newServices() []*service {
	var out []*service
	for _, t := range sources.Services() {
		s := &service{typ: t, counters: map[string]*prometheus.CounterVec{}}
		for _, c := range t.Counters {
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobwatch_" + c.Name, Help: c.Help}, []string{c.Label})
			for _, l := range c.Values {
				v.WithLabelValues(l)
			}
			s.counters[c.Name] = v
		}
		out = append(out, s)
	}
	return out
}

// serviceSpecs are the model's specs of the services g's config turns on:
// the model knows their sources from the start, before attachServices.
func (e *Exporter) serviceSpecs(cfg *config.Config) []model.SourceSpec {
	var out []model.SourceSpec
	for _, s := range e.services {
		if s.typ.Enabled(cfg) {
			t := s.typ.Type
			out = append(out, model.SourceSpec{Name: t, Type: t, Identity: t, Runs: true, LateWindow: s.typ.LateWindow})
		}
	}
	return out
}

// attachServices configures every service with g's config, opening those
// it turns on for the first time (a service keeps what it receives in the
// state directory, open by then), and adds their sources to g.
func (e *Exporter) attachServices(g *generation) error {
	for _, s := range e.services {
		svc := s.loaded()
		if svc == nil && s.typ.Enabled(g.cfg) {
			// A service stamps what it receives (a check-in) by the model's
			// clock: after a step back of the host's clock its records are
			// this host's present, as those of its own jobs are.
			opened, err := s.typ.Open(sources.ServiceDeps{
				Deps:     sources.Deps{Logger: e.opts.Logger, Now: e.tracker.Now}.WithDefaults(),
				StateDir: e.opts.StateDir,
				Count:    s.count,
				Reload:   e.Reload,
			})
			if err != nil {
				return fmt.Errorf("%s: %w", s.typ.Type, err)
			}
			s.svc.Store(&opened)
			svc = opened
		}
		if svc == nil {
			continue
		}
		if src := svc.Configure(g.cfg); src != nil {
			g.sources = append(g.sources, src)
		}
	}
	return nil
}

// closeServices stops every open service from receiving.
func (e *Exporter) closeServices() error {
	var errs []error
	for _, s := range e.services {
		if svc := s.loaded(); svc != nil {
			errs = append(errs, svc.Close())
		}
	}
	return errors.Join(errs...)
}

// Output reads an output a service keeps, by the reference its records
// carry ("checkin:..."): for the status page and the job API.
func (e *Exporter) Output(ref string) (string, error) {
	for _, s := range e.services {
		if !strings.HasPrefix(ref, s.typ.Type+":") {
			continue
		}
		if r, ok := s.loaded().(sources.OutputReader); ok {
			return r.ReadOutput(ref)
		}
	}
	return "", fmt.Errorf("no service keeps the output %q", ref)
}

// Route is a URL path a service answers and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Routes are the services' paths (/ping/ for check-ins, docs/checkins.md),
// for the server to mount: each answers as its service's type says it
// does while no config has turned it on.
func (e *Exporter) Routes() []Route {
	var out []Route
	for _, s := range e.services {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if svc := s.loaded(); svc != nil {
				svc.ServeHTTP(w, r)
				return
			}
			s.typ.Off(w, r, s.count)
		})
		for _, p := range append([]string{s.typ.Path}, s.typ.MorePaths...) {
			out = append(out, Route{p, h})
		}
	}
	return out
}

// Root hands a request of the root to the service that claims it
// (sources.RootClaimer: check-ins at /<uuid>), else to next.
func (e *Exporter) Root(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, s := range e.services {
			if c, ok := s.loaded().(sources.RootClaimer); ok && c.ClaimsRoot(r) {
				s.loaded().ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// View is the state as last saved: what scrapes and the status page show.
func (e *Exporter) View() ([]model.JobView, []model.SourceView) { return e.saved.Load().View() }

// discoverLoop looks at the host's crontabs and timers every interval of
// g's discovery block, until ctx is done.
func (e *Exporter) discoverLoop(ctx context.Context, g *generation) {
	interval := g.cfg.Discovery.Interval.D()
	if e.opts.DiscoveryInterval > 0 {
		interval = e.opts.DiscoveryInterval
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.discoverOnce(g)
		t.Reset(interval)
	}
}

// discoverOnce exports what the host holds and, in host mode, offers Run
// a generation with the host's jobs when they are not g's any more.
func (e *Exporter) discoverOnce(g *generation) {
	s, err := e.scanHost(g.base, g.text, g.scanned)
	if err != nil {
		e.discoveryFailed(err)
		return
	}
	e.discoveryFindings.Reset()
	for _, c := range s.report.Counts() {
		e.discoveryFindings.WithLabelValues(c.Kind, string(c.Severity)).Set(float64(c.N))
	}
	unwatched := len(s.report.Unwatched)
	if g.base.Discovery.Watch {
		unwatched = 0 // host mode watches them
	}
	e.discoveryUnwatched.Set(float64(unwatched))
	e.discoveryLast.Set(float64(e.opts.Now().Unix()))
	if !g.base.Discovery.Watch || bytes.Equal(s.host, g.host) {
		return
	}
	next, err := e.prepareHost(g.base, g.text, s)
	if err != nil {
		e.discoveryFailed(err)
		return
	}
	next.from = g
	e.offer(next)
}

// hostScan is one look at the host: what discovery found and, in host
// mode, the config with the host's jobs (discover.HostConfig).
type hostScan struct {
	report discover.Report
	host   []byte
}

// scanHost reads the host under base's discovery root and matches its
// jobs against text, the config file as loaded.
func (e *Exporter) scanHost(base *config.Config, text []byte, prev *discover.Host) (*hostScan, error) {
	s, err := scanHost(base, text, prev, discover.Options{Now: e.opts.Now(), P99: e.p99()}, e.opts.RunLog)
	if err == nil && s.report.Kept > 0 {
		e.opts.Logger.Warn("keeping the host's jobs in files discovery cannot read now as the last discovery found them",
			"root", base.Discovery.Root, "kept_jobs", s.report.Kept)
	}
	return s, err
}

// scanHost reads the host under base's discovery root and matches its
// jobs against text, the config file as loaded; in host mode it adds
// them to text, the jobwatch run lines without --log writing to runLog.
func scanHost(base *config.Config, text []byte, prev *discover.Host, o discover.Options, runLog string) (*hostScan, error) {
	watched, err := discover.WatchedFromYAML(text)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	root := base.Discovery.Root
	rep, err := discover.Scan(root, prev, watched, o)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", root, err)
	}
	return newHostScan(base, text, rep, runLog)
}

// rescanned is the host h, as a scan that succeeded before read it, matched
// against text, the config file as loaded now: what a reload watches when
// the host cannot be read (load). It has no findings: discovery's metrics
// stay those of the last scan.
func rescanned(h *discover.Host, base *config.Config, text []byte, runLog string) (*hostScan, error) {
	watched, err := discover.WatchedFromYAML(text)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	return newHostScan(base, text, discover.Report{Host: h, Unwatched: watched.Unwatched(h)}, runLog)
}

// newHostScan is rep with, in host mode, its host's jobs added to text.
func newHostScan(base *config.Config, text []byte, rep discover.Report, runLog string) (*hostScan, error) {
	s := &hostScan{report: rep}
	if base.Discovery.Watch {
		var err error
		if s.host, err = discover.HostConfig(rep.Host, text, runLog); err != nil {
			return nil, fmt.Errorf("host mode: %w", err)
		}
	}
	return s, nil
}

// config is the config with the host's jobs, read as the file at path.
func (s *hostScan) config(path string) (*config.Config, error) {
	cfg, err := config.ParseAt(s.host, path)
	if err != nil {
		return nil, fmt.Errorf("host mode: the config with the host's jobs: %w", err)
	}
	return cfg, nil
}

// p99 are the jobs' P99 run times, for discovery's no_lock check.
func (e *Exporter) p99() map[string]time.Duration {
	p99 := map[string]time.Duration{}
	jobs, _ := e.View()
	for i := range jobs {
		if q, ok := model.DurationQuantile(jobs[i].LastDurations(), 0.99); ok {
			p99[jobs[i].Spec.Name] = time.Duration(q * float64(time.Second))
		}
	}
	return p99
}

// prepareHost prepares the generation of base, the config file as loaded
// (its text: text), with the host's jobs of s added when s has them.
func (e *Exporter) prepareHost(base *config.Config, text []byte, s *hostScan) (*generation, error) {
	cfg := base
	if s != nil && s.host != nil {
		merged, err := s.config(e.opts.ConfigFile)
		if err != nil {
			return nil, err
		}
		cfg = merged
	}
	g, err := e.prepare(e.withServiceJobs(cfg))
	if err != nil {
		return nil, err
	}
	g.base, g.text = base, text
	if s != nil && s.host != nil {
		g.host, g.hostJobs, g.scanned = s.host, len(s.report.Unwatched), s.report.Host
		markDiscovered(g.jobs, base)
	}
	return g, nil
}

// markDiscovered marks the jobs host mode added to base, the config file
// as loaded: when one disappears from the host it is retired, its history
// kept, where a job of the file removed from it is dropped.
func markDiscovered(jobs []model.JobSpec, base *config.Config) {
	configured := make(map[string]bool, len(base.Jobs))
	for _, j := range base.Jobs {
		configured[j.Name] = true
	}
	for i := range jobs {
		jobs[i].Discovered = !configured[jobs[i].Name]
	}
}

func (e *Exporter) discoveryFailed(err error) {
	e.discoveryErrors.Inc()
	e.opts.Logger.Warn("discovery failed", "err", err)
}

// offer hands g to Run, replacing a generation offered before and not
// adopted yet; it never waits.
func (e *Exporter) offer(g *generation) {
	for {
		select {
		case e.rediscovered <- g:
			return
		default:
		}
		select {
		case <-e.rediscovered:
		default:
		}
	}
}

// adopt runs g, which the discovery loop built when the host's jobs
// changed, as a reload would; unless a reload has replaced the generation
// it was built from since, whose own loop then looks again.
func (e *Exporter) adopt(g *generation) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if g.from != e.running {
		return
	}
	g.from = nil
	if err := e.attachServices(g); err != nil {
		e.discoveryFailed(err)
		return
	}
	e.swap(g)
	e.opts.Logger.Info("the host's jobs changed; watching them", "jobs", len(g.jobs), "host_jobs", g.hostJobs, "sources", len(g.sources))
}

// The label names of the services' and discovery's metrics, which no job's
// labels: may take (package labelname).
var (
	findingsLabels   = []string{"kind", "severity"}
	statusPageLabels = []string{"url"}
)

func init() {
	labelname.Reserve(func() []string {
		names := slices.Concat(findingsLabels, statusPageLabels)
		for _, t := range sources.Services() {
			for _, c := range t.Counters {
				names = append(names, c.Label)
			}
		}
		return names
	})
}

// newServiceMetrics are the metrics of the services and of discovery.
func (e *Exporter) newServiceMetrics() []prometheus.Collector {
	e.discoveryFindings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_findings", Help: "Scheduling mistakes the last discovery found on the host, by kind and severity (docs/discover.md)."},
		findingsLabels)
	e.discoveryUnwatched = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_unwatched_jobs", Help: "Scheduled jobs on the host (cron lines, timers) that no configured job watches, as the last discovery found them."})
	e.discoveryWatched = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_watched_jobs", Help: "Scheduled jobs on the host that host mode (discovery.watch) watches besides the configured jobs."})
	e.discoveryLast = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobwatch_discovery_last_run_timestamp_seconds", Help: "Time of the last discovery that succeeded."})
	e.discoveryErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobwatch_discovery_errors_total", Help: "Discoveries that failed (the config or the host could not be read)."})
	statusPage := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobwatch_status_page_info", Help: "The status page's URL (--web.external-url), for alerts to link a job's page; always 1, absent without the flag."},
		statusPageLabels)
	if e.opts.StatusPageURL != "" {
		statusPage.WithLabelValues(e.opts.StatusPageURL).Set(1)
	}
	out := []prometheus.Collector{discoveryCollector{e}, statusPage}
	for _, s := range e.services {
		for _, c := range s.typ.Counters {
			out = append(out, s.counters[c.Name])
		}
	}
	return out
}

// discoveryCollector shows discovery's metrics only while it is enabled.
type discoveryCollector struct{ e *Exporter }

func (d discoveryCollector) Describe(ch chan<- *prometheus.Desc) {
	d.e.discoveryFindings.Describe(ch)
	d.e.discoveryUnwatched.Describe(ch)
	d.e.discoveryWatched.Describe(ch)
	d.e.discoveryLast.Describe(ch)
	d.e.discoveryErrors.Describe(ch)
}

func (d discoveryCollector) Collect(ch chan<- prometheus.Metric) {
	if !d.e.discoveryOn.Load() {
		return
	}
	d.e.discoveryFindings.Collect(ch)
	d.e.discoveryUnwatched.Collect(ch)
	d.e.discoveryWatched.Collect(ch)
	d.e.discoveryLast.Collect(ch)
	d.e.discoveryErrors.Collect(ch)
}

// withServiceJobs is cfg with the jobs services made (sources.ServiceType's
// Jobs: check-ins' ?create=1), or cfg itself when they made none.
func (e *Exporter) withServiceJobs(cfg *config.Config) *config.Config {
	var made []config.Job
	for _, s := range e.services {
		if s.typ.Jobs != nil && s.typ.Enabled(cfg) {
			made = append(made, s.typ.Jobs(e.opts.StateDir, cfg)...)
		}
	}
	if len(made) == 0 {
		return cfg
	}
	out := *cfg
	out.Jobs = append(append([]config.Job(nil), cfg.Jobs...), made...)
	return &out
}
