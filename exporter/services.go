package exporter

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/config"
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
			// Live: what it would have received while jobwatch was
			// stopped is not known (model/pause.go).
			out = append(out, model.SourceSpec{Name: t, Type: t, Identity: t, Runs: true, LateWindow: s.typ.LateWindow, Live: true})
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

// Proposals are the jobs services know the config file does not list
// (sources.Proposer), for the status page.
func (e *Exporter) Proposals() []sources.Proposal {
	var out []sources.Proposal
	for _, s := range e.services {
		if p, ok := s.loaded().(sources.Proposer); ok {
			out = append(out, p.Proposals()...)
		}
	}
	return out
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
