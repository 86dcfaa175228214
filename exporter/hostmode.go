// Host mode: the host's crontabs and timers discovered every interval of
// the discovery block, the config they make prepared beside the one in use,
// and adopted once it has changed and validated; discovery's metrics shown
// while it is enabled.

package exporter

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/discover"
	"github.com/jobwatch/jobwatch/model"
)

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
	next, err := e.prepareRescan(g, s)
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
	var names []string
	if base.Discovery.Watch {
		names = make([]string, len(base.Jobs))
		for i := range base.Jobs {
			names[i] = base.Jobs[i].Name
		}
	}
	return e.prepareHostOf(base, names, text, s)
}

// prepareRescan prepares the generation of g's config file, as loaded, with
// the host's jobs of s, in host mode: g is settled, without the file's
// jobs, which s's config holds (s.host).
func (e *Exporter) prepareRescan(g *generation, s *hostScan) (*generation, error) {
	return e.prepareHostOf(g.base, g.configured, g.text, s)
}

// prepareHostOf is prepareHost, with configured the names of base's jobs
// in host mode.
func (e *Exporter) prepareHostOf(base *config.Config, configured []string, text []byte, s *hostScan) (*generation, error) {
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
	g.base, g.configured = base, configured
	if base.Discovery.Watch {
		g.text = text // for rescans; outside host mode nothing reads it (50 bytes a job)
	}
	if s != nil && s.host != nil {
		g.host, g.hostJobs, g.scanned = s.host, len(s.report.Unwatched), s.report.Host
		markDiscovered(g.jobs, configured)
	}
	return g, nil
}

// markDiscovered marks the jobs host mode added to the config file as
// loaded, whose jobs are named configured: when one disappears from the
// host it is retired, its history kept, where a job of the file removed
// from it is dropped.
func markDiscovered(jobs []model.JobSpec, configured []string) {
	inFile := make(map[string]bool, len(configured))
	for _, name := range configured {
		inFile[name] = true
	}
	for i := range jobs {
		jobs[i].Discovered = !inFile[jobs[i].Name]
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
