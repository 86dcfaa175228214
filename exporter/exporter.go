// Package exporter ties jobwatch together: it loads the config, runs the
// sources into the job model, saves the state, reaps lost runs and reloads
// the config on request. cmd/jobwatch only wires it to flags and HTTP.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/collector"
	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/discover"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/state"
)

// Options configure an Exporter.
type Options struct {
	ConfigFile string
	StateDir   string
	Logger     *slog.Logger
	Now        func() time.Time
	// Mono is the monotonic clock beside Now (model.Options.Mono); both
	// unset: the real ones.
	Mono func() time.Duration
	// Host is this machine's name (runs reported from it are checked for a
	// live process); default os.Hostname.
	Host string
	// SaveInterval: the least time between the starts of two commits of
	// the changed state (default DefaultSaveInterval, so at most 50 a
	// second): a change is committed at once when the last commit began
	// that long ago, else with everything else that arrived by then when
	// it is up (commitSchedule). Scrapes show the state as last committed,
	// so this bounds how long a record takes to show under a stream.
	SaveInterval time.Duration
	// ReapInterval: how often runs whose process is gone are looked for
	// (default 2s, so a killed run is closed within 10s).
	ReapInterval time.Duration
	// StartupHold: after a start or reload nothing is decided for this
	// long, and until every source has read to its end (default
	// model.DefaultStartupHold; negative: none, for tests).
	StartupHold time.Duration
	// Location is the zone of schedules that name none (default: the zone
	// jobwatch runs in).
	Location *time.Location
	// StatusPageURL is where people reach the status page (from
	// --web.external-url): exported for alerts to link a job's page.
	StatusPageURL string
	// NewSource builds a source from its config; default sources.New.
	NewSource func(config.Source, sources.Deps) (sources.Source, error)
	// DiscoveryInterval, when set, replaces the config's discovery
	// interval (at least 10s there): for tests.
	DiscoveryInterval time.Duration
	// RunLog is the run log of the jobwatch run lines without --log that
	// host mode watches (default runcmd.DefaultLog): for tests.
	RunLog string
}

// decideInterval is how often the jobs holding records are decided.
const decideInterval = 100 * time.Millisecond

// DefaultSaveInterval is the least time between the starts of two commits
// of the state: at most 50 commits a second (a burst; commitSchedule).
const DefaultSaveInterval = 20 * time.Millisecond

// Exporter is a running jobwatch.
type Exporter struct {
	opts    Options
	tracker *model.Tracker
	store   store

	reloadMu sync.Mutex // one reload at a time
	mu       sync.Mutex // guards running and runCtx
	running  *generation
	runCtx   context.Context

	saveMu  sync.Mutex     // serialises saves; guards pending and closed
	pending *model.Changes // taken from the tracker, not saved yet (a save failed)
	closed  bool
	// saved is the state as last written: what scrapes render. It is
	// replaced after each successful save, never changed in place.
	saved atomic.Pointer[model.Saved]

	reloadOK      prometheus.Gauge
	reloadTime    prometheus.Gauge
	saveFailures  prometheus.Counter
	lastSaveTime  prometheus.Gauge
	registerables []prometheus.Collector
	jobConfig     *collector.JobConfig   // the jobs' labels and alert thresholds
	served        []prometheus.Collector // registerables, the jobs left to collector.Handler

	// services (check-ins) are opened once a config turns them on.
	services []*service

	discoveryOn        atomic.Bool
	discoveryFindings  *prometheus.GaugeVec
	discoveryUnwatched prometheus.Gauge
	discoveryWatched   prometheus.Gauge
	discoveryLast      prometheus.Gauge
	discoveryErrors    prometheus.Counter
	// rediscovered holds a generation the discovery loop built when the
	// host's jobs changed (host mode), for Run to adopt.
	rediscovered chan *generation
}

// store is where the state is written; *state.Store is one.
type store interface {
	Save(c *model.Changes, prev, all *model.Saved) error
	Close() error
}

// generation is one config's jobs and sources, and the sources' goroutines
// once started.
type generation struct {
	cfg *config.Config
	// base is the config file as loaded and text its text (in host mode
	// only, for rescans); cfg is base
	// with, in host mode (discovery.watch), the host's jobs added: host is
	// then discover.HostConfig's text, and hostJobs the jobs it added.
	// Once the generation is configured, both are without their jobs
	// (settle): configured keeps, in host mode, the names of base's.
	base       *config.Config
	configured []string
	text       []byte
	host       []byte
	hostJobs   int
	// scanned is the host as the scan that made host read it: a reload
	// whose scan fails watches its jobs with the config loaded (load).
	scanned *discover.Host
	// from is the running generation a rediscovered one was built from.
	from    *generation
	jobs    []model.JobSpec
	specs   []model.SourceSpec
	sources []sources.Source
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New loads the config and the saved state. It fails on an invalid config
// and on a state file that cannot be read.
func New(o Options) (*Exporter, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	e := newExporter(o)
	gen, err := e.load(nil)
	if err != nil {
		return nil, err
	}
	e.configure(gen)
	store, err := e.restore()
	if err != nil {
		return nil, err
	}
	if err := e.attachServices(gen); err != nil {
		store.Close()
		return nil, err
	}
	gen.settle()
	e.discoveryOn.Store(gen.cfg.Discovery.Enabled)
	e.discoveryWatched.Set(float64(gen.hostJobs))
	// Scrapes show the loaded state (and jobs new to it, with nothing
	// counted yet) until the first save, which writes it all.
	e.pending = e.tracker.Changes()
	e.saved.Store((*model.Saved)(nil).With(e.pending))
	e.store = store
	e.running = gen
	e.reloadOK.Set(1)
	e.reloadTime.Set(float64(o.Now().Unix()))
	return e, nil
}

// withDefaults fills what o leaves unset.
func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		// The real clocks: the model sees steps of the wall clock against
		// the monotonic one (a Now of a test's own is taken as steady).
		o.Now, o.Mono = time.Now, model.ProcessMono
	}
	if o.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("host name: %w", err)
		}
		o.Host = h
	}
	if o.SaveInterval == 0 {
		o.SaveInterval = DefaultSaveInterval
	}
	if o.ReapInterval == 0 {
		o.ReapInterval = 2 * time.Second
	}
	if o.NewSource == nil {
		o.NewSource = sources.New
	}
	return o, nil
}

// newExporter makes the exporter's model and metrics; nothing is loaded.
func newExporter(o Options) *Exporter {
	e := &Exporter{
		opts:    o,
		tracker: model.New(model.Options{Host: o.Host, Now: o.Now, Mono: o.Mono, Logger: o.Logger, StartupHold: o.StartupHold}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobwatch_config_last_reload_successful", Help: "1 if the last config reload succeeded."}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobwatch_config_last_reload_success_timestamp_seconds", Help: "Time of the last successful config load."}),
		saveFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jobwatch_state_save_failures_total", Help: "State saves that failed (the state saved before is kept, and shown, until a save succeeds)."}),
		lastSaveTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobwatch_state_last_save_timestamp_seconds", Help: "Time of the last successful state save."}),
		services:     newServices(),
		rediscovered: make(chan *generation, 1),
		jobConfig:    collector.NewJobConfig(),
	}
	own := append([]prometheus.Collector{e.reloadOK, e.reloadTime, e.saveFailures, e.lastSaveTime, collector.NewClocks(e.tracker), e.jobConfig}, e.newServiceMetrics()...)
	// Scrapes judge "seconds since" by the model's clock, which a
	// backward step of the host's clock does not move back.
	e.registerables = append([]prometheus.Collector{collector.New(savedView{e}, e.tracker.Now)}, own...)
	e.served = own
	return e
}

// restore opens the state directory and restores the model from the state
// saved there, if any.
func (e *Exporter) restore() (*state.Store, error) {
	store, err := state.Open(e.opts.StateDir)
	if err != nil {
		return nil, err
	}
	store.SetClock(e.tracker.Now)
	snap, err := store.Load()
	if err != nil {
		store.Close()
		return nil, err
	}
	if snap != nil {
		if err := e.tracker.Restore(snap); err != nil {
			store.Close()
			return nil, fmt.Errorf("state %s: %w", store.Path(), err)
		}
	}
	return store, nil
}

// Collectors are the metrics to register, the jobs' included.
func (e *Exporter) Collectors() []prometheus.Collector { return e.registerables }

// ServedCollectors are the metrics to register in the registry of a
// collector.Handler, which renders the jobs' and the sources' from Saved.
func (e *Exporter) ServedCollectors() []prometheus.Collector { return e.served }

// Saved is the state as last saved: what scrapes show (see savedView).
func (e *Exporter) Saved() *model.Saved { return e.saved.Load() }

// Now is the model's clock (model.Tracker.Now), for the status page.
func (e *Exporter) Now() time.Time { return e.tracker.Now() }

// Tracker is the job model, for tests.
func (e *Exporter) Tracker() *model.Tracker { return e.tracker }

// prepare builds a config's jobs and sources without starting anything, so
// that a bad config changes nothing.
func (e *Exporter) prepare(cfg *config.Config) (*generation, error) {
	jobs, err := JobSpecs(cfg, e.opts.Location)
	if err != nil {
		return nil, err
	}
	g := &generation{cfg: cfg, jobs: jobs}
	deps := sourceDeps(cfg, e.opts.Logger, e.opts.Now)
	var errs []error
	for _, sc := range cfg.Sources {
		src, err := e.opts.NewSource(sc, deps)
		if err != nil {
			errs = append(errs, fmt.Errorf("source %q: %w", sc.Name, err))
			continue
		}
		g.sources = append(g.sources, src)
		spec := model.SourceSpec{Name: src.Name(), Type: src.Type(), Identity: sc.Identity()}
		if r, ok := sc.Config.(sources.RunReporter); ok {
			spec.Runs, spec.LateWindow = true, r.LateWindow()
		}
		g.specs = append(g.specs, spec)
	}
	if err := config.Join(errs...); err != nil {
		return nil, err
	}
	g.specs = append(g.specs, e.serviceSpecs(cfg)...)
	return g, nil
}

func (e *Exporter) configure(g *generation) {
	e.tracker.SetRetiredRetention(g.cfg.Discovery.RetiredRetention.D())
	e.tracker.Configure(g.jobs, g.specs)
	e.jobConfig.Configure(g.jobs)
}

// settle lets g's decoded jobs go once the model and the services have
// taken what they need of them (configure, attachServices): at 50,000 jobs
// they were 12 MB beside the model's JobSpecs. What is read of g later
// is its discovery block and, in host mode, the names of the configured
// jobs, which a rescan's generation is marked against (markDiscovered).
func (g *generation) settle() {
	g.base = withoutJobs(g.base)
	g.cfg = withoutJobs(g.cfg)
}

// withoutJobs is cfg without its jobs.
func withoutJobs(cfg *config.Config) *config.Config {
	if cfg.Jobs == nil {
		return cfg
	}
	out := *cfg
	out.Jobs = nil
	return &out
}

// start runs g's sources, each from its saved position.
func (e *Exporter) start(ctx context.Context, g *generation) {
	ctx, g.cancel = context.WithCancel(ctx)
	for _, src := range g.sources {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if err := src.Run(ctx, e.tracker.Position(src.Name()), e.tracker); err != nil {
				e.opts.Logger.Error("source stopped", "source", src.Name(), "err", err)
				e.tracker.SetHealth(src.Name(), false, err)
			}
		}()
	}
	if g.cfg.Discovery.Enabled {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			e.discoverLoop(ctx, g)
		}()
	}
}

func (e *Exporter) stop(g *generation) {
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
}

// Reload loads the config file again. A config that does not validate, or
// whose sources cannot be built, is rejected and the running one is kept.
func (e *Exporter) Reload() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	g, err := e.load(e.running.scanned)
	if err != nil {
		e.reloadOK.Set(0)
		e.opts.Logger.Error("config reload failed; keeping the running config", "err", err)
		return err
	}
	if err := e.attachServices(g); err != nil {
		e.reloadOK.Set(0)
		e.opts.Logger.Error("config reload failed; keeping the running config", "err", err)
		return err
	}
	e.swap(g)
	e.reloadOK.Set(1)
	e.reloadTime.Set(float64(e.opts.Now().Unix()))
	e.opts.Logger.Info("config reloaded", "jobs", len(g.jobs), "sources", len(g.sources), "host_jobs", g.hostJobs)
	return nil
}

// swap runs g in place of the running generation. Jobs and sources that
// stay keep their state (model.Tracker.Configure); a job that is gone is
// no longer expected: a discovered one is retired, its history kept, one
// of the config file dropped with its state.
func (e *Exporter) swap(g *generation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stop(e.running)
	e.configure(g)
	g.settle() // before start: the discovery loop reads g
	e.discoveryOn.Store(g.cfg.Discovery.Enabled)
	e.discoveryWatched.Set(float64(g.hostJobs))
	if e.runCtx != nil {
		e.start(e.runCtx, g)
	}
	e.running = g
}

// load reads the config file and, in host mode, the host. A host that
// cannot be read, or whose jobs do not make a valid config, is logged and
// counted; the jobs of prev, the host as the running generation last read
// it under the same root, are then watched with the config loaded, so that
// a reload during a transient failure retires none of them. Without prev
// (at start) the configured jobs are watched alone until a discovery
// succeeds.
func (e *Exporter) load(prev *discover.Host) (*generation, error) {
	base, text, err := config.Read(e.opts.ConfigFile)
	if err != nil {
		return nil, err
	}
	if !base.Discovery.Watch {
		return e.prepareHost(base, text, nil)
	}
	g, err := e.prepareScanned(base, text, func() (*hostScan, error) { return e.scanHost(base, text, prev) })
	if err == nil {
		return g, nil
	}
	e.discoveryFailed(err)
	if prev != nil && prev.Root == base.Discovery.Root {
		g, err := e.prepareScanned(base, text, func() (*hostScan, error) { return rescanned(prev, base, text, e.opts.RunLog) })
		if err == nil {
			e.opts.Logger.Warn("keeping the host's jobs of the last discovery that succeeded until one succeeds again",
				"root", prev.Root, "host_jobs", g.hostJobs)
			return g, nil
		}
		e.opts.Logger.Warn("the host's jobs of the last discovery that succeeded do not make a valid config with the one loaded; watching the configured jobs alone", "err", err)
	}
	return e.prepareHost(base, text, nil)
}

// prepareScanned prepares the generation of base, the config file as
// loaded (its text: text), with the host's jobs of the scan scan makes.
func (e *Exporter) prepareScanned(base *config.Config, text []byte, scan func() (*hostScan, error)) (*generation, error) {
	s, err := scan()
	if err != nil {
		return nil, err
	}
	return e.prepareHost(base, text, s)
}

// Run runs the sources, the state saver and the reaper until ctx is done,
// then saves the state a last time.
func (e *Exporter) Run(ctx context.Context) error {
	e.mu.Lock()
	e.runCtx = ctx
	e.start(ctx, e.running)
	e.mu.Unlock()

	reap := time.NewTicker(e.opts.ReapInterval)
	defer reap.Stop()
	// Records held for their watermark are decided soon after it passes
	// them, not only at the next reap; the ticker runs only while some are
	// held.
	decide := time.NewTicker(decideInterval)
	decide.Stop()
	defer decide.Stop()
	// The saver: the state loaded is written once in this format, then
	// sched says when changes are committed (commitSchedule).
	sched := newCommitSchedule(e.opts.SaveInterval)
	sched.change(time.Now())
	timer := time.NewTimer(0)
	defer timer.Stop()
	rearm := func() {
		if at, ok := sched.due(); ok {
			timer.Reset(time.Until(at))
		} else {
			timer.Stop()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return e.shutdown()
		case <-e.tracker.Changed():
			sched.change(time.Now())
			rearm()
		case <-e.tracker.Decided():
			sched.changeLazy(time.Now())
			rearm()
		case <-e.tracker.CaughtUp():
			sched.caughtUp()
			rearm()
		case <-timer.C:
			// A timer set for an earlier deadline may fire after a change
			// moved it: save only when a save is due now.
			now := time.Now()
			if at, ok := sched.due(); ok && !now.Before(at) {
				sched.begin(now)
				if err := e.save(); err != nil {
					sched.failed(now) // logged and counted; retried
				}
				sched.done(now, time.Now())
			}
			rearm()
		case <-reap.C:
			e.tracker.Reap()
		case <-e.tracker.Held():
			decide.Reset(decideInterval)
		case <-decide.C:
			if !e.tracker.DecideHeld() {
				decide.Stop()
			}
		case g := <-e.rediscovered:
			e.adopt(g)
		}
	}
}

// shutdown stops receiving and reading, saves what was read, and closes
// the state.
func (e *Exporter) shutdown() error {
	// No check-in is acknowledged from now on; those that were are in the
	// spool, applied now or at the next start.
	closeErr := e.closeServices()
	e.mu.Lock()
	e.stop(e.running)
	e.mu.Unlock()
	err := e.save()
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	e.closed = true
	if err != nil {
		err = fmt.Errorf("final state save (the next start reads again from the last saved position): %w", err)
	}
	return errors.Join(err, closeErr, e.store.Close())
}

// save writes what changed since the last successful save and, once it is
// written, publishes the state it belongs to for scrapes to render.
func (e *Exporter) save() error {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	if e.closed {
		return nil
	}
	c := e.pending.Merge(e.tracker.Changes())
	if c.Empty() {
		return nil
	}
	prev := e.saved.Load()
	all := prev.With(c)
	if err := e.store.Save(c, prev, all); err != nil {
		e.pending = c
		e.saveFailures.Inc()
		e.opts.Logger.Error("saving state; scrapes show the state saved before until a save succeeds", "err", err)
		return err
	}
	e.pending = nil
	e.saved.Store(all)
	e.lastSaveTime.Set(float64(e.opts.Now().Unix()))
	if state.ManyJobs(c, all) {
		// A catch-up's or a start-up hold's commit changes every job: the
		// state committed before (about 1 KB a job) is garbage now, and
		// the collector's target was set while both were live, so the
		// heap would grow to 1.5 times both before the next collection.
		runtime.GC()
	}
	return nil
}

// savedView is what a scrape shows: the state as last saved. A scrape
// reads; it never writes or fsyncs. Counters shown are never ahead of the
// state a restart after kill -9 resumes from, so Prometheus never sees them
// go back, even when saves fail (disk full): the scrape then goes on
// showing the last state saved, and the failures are counted.
type savedView struct{ e *Exporter }

func (v savedView) View() ([]model.JobView, []model.SourceView) {
	return v.e.saved.Load().View()
}

// sourceDeps is what every source of cfg is built with.
func sourceDeps(cfg *config.Config, logger *slog.Logger, now func() time.Time) sources.Deps {
	deps := sources.Deps{Logger: logger, Now: now}
	for _, j := range cfg.Jobs {
		deps.Jobs = append(deps.Jobs, j.Name)
	}
	return deps
}
