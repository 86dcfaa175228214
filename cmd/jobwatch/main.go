// Command jobwatch exports the state of scheduled jobs to Prometheus and
// wraps jobs with a lock, a timeout and a run record. This file only wires
// flags, logging and HTTP to the packages that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/jobwatch/jobwatch/collector"
	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/internal/ratelog"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/status"
	"github.com/jobwatch/jobwatch/wrapper"
)

// defaultPort lies outside 9100-9999, which Prometheus' default port
// allocation list has given out entirely.
const defaultPort = ":10474"

func main() {
	// jobwatch run, under every cron job, is dispatched first: its usual
	// command line needs neither kingpin's application nor a logger. The
	// rest of the binary's cost, its packages' initialisation, comes before
	// main whatever the command: jobwatch-run (docs/run.md) is the wrapper
	// alone.
	if f, ok := plainRun(os.Args[1:]); ok {
		os.Exit(wrapper.RunFlags(f))
	}
	os.Exit(run(os.Args[1:]))
}

// HTTP server limits (docs/web.md). The write timeout runs from the end of
// a request's headers to the end of its response: a scrape of 10,000 jobs
// (27 MB of text) took 1.7-3.6 s on a 2-core machine under a load of 9, and
// a scrape timeout is at most the scrape interval, a minute or two. The
// header limit leaves room for basic auth and a browser's cookies.
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultReadTimeout       = 30 * time.Second
	defaultWriteTimeout      = 2 * time.Minute
	defaultIdleTimeout       = 2 * time.Minute
	maxHeaderBytes           = 32 << 10
)

// webOptions are serve's HTTP flags.
type webOptions struct {
	metricsPath       string
	externalURL       string
	enableLifecycle   bool
	enablePprof       bool
	enableAdminAPI    bool
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	classicBuckets    bool
	toolkit           *web.FlagConfig
}

func addWebFlags(serve *kingpin.CmdClause) *webOptions {
	o := &webOptions{}
	serve.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&o.metricsPath)
	serve.Flag("web.external-url", "The URL under which jobwatch is reached (behind a reverse proxy, say): links of the status page, and of the alerts to it.").StringVar(&o.externalURL)
	serve.Flag("web.enable-lifecycle", "Reload the configuration on POST or PUT /-/reload (same-origin requests only). SIGHUP reloads either way.").BoolVar(&o.enableLifecycle)
	serve.Flag("web.enable-admin-api", "Serve the admin API: POST /api/v1/jobs/NAME/pause and /resume, for jobwatch pause and resume (same-origin requests only).").BoolVar(&o.enableAdminAPI)
	serve.Flag("web.enable-pprof", "Serve Go's profiling endpoints under /debug/pprof/ and link them from the landing page.").BoolVar(&o.enablePprof)
	serve.Flag("web.read-header-timeout", "Close a connection whose request headers take longer than this.").Default(defaultReadHeaderTimeout.String()).DurationVar(&o.readHeaderTimeout)
	serve.Flag("web.read-timeout", "Close a connection whose whole request takes longer than this.").Default(defaultReadTimeout.String()).DurationVar(&o.readTimeout)
	serve.Flag("web.write-timeout", "Give up on a response not written within this time after its request's headers.").Default(defaultWriteTimeout.String()).DurationVar(&o.writeTimeout)
	serve.Flag("web.idle-timeout", "Close a kept-alive connection idle for this long.").Default(defaultIdleTimeout.String()).DurationVar(&o.idleTimeout)
	serve.Flag("metrics.classic-duration-buckets", "Give jobwatch_job_duration_seconds its classic buckets ("+bucketList()+" seconds) beside its native ones: 18 series a job more, for a Prometheus that does not ingest native histograms and wants quantiles (docs/metrics.md).").BoolVar(&o.classicBuckets)
	o.toolkit = kingpinflag.AddFlags(serve, defaultPort)
	return o
}

// bucketList is model.DurationBuckets as the help of a flag lists them.
func bucketList() string {
	var b []string
	for _, ub := range model.DurationBuckets {
		b = append(b, strconv.FormatFloat(ub, 'g', -1, 64))
	}
	return strings.Join(b, ", ")
}

func run(args []string) int {
	fillVersion()
	app := kingpin.New("jobwatch", "Prometheus exporter and staleness watchdog for scheduled jobs.")
	addVersionFlag(app)
	app.HelpFlag.Short('h')
	app.UsageTemplate(usageTemplate)
	logConfig := &promslog.Config{}
	flag.AddFlags(app, logConfig)

	serveCmd, serve := addServeCommand(app)
	checkCmd, check := addCheckCommand(app)
	runCmd, runFlags := addRunCommand(app)
	schedCmd, schedJob := addScheduleCommand(app)
	discoverCmd, discoverRun := addDiscoverCommand(app)
	statusCmds := addStatusCommands(app)

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobwatch: %v (try --help)\n", err)
		return 2
	}
	// jobwatch run logs nothing of its own: it returns before the logger
	// is built. (Its usual command line does not get here at all: see
	// plainRun.)
	if cmd == runCmd.FullCommand() {
		return wrapper.RunFlags(runFlags())
	}
	// Warnings that can repeat without bound (one per record) carry a
	// ratelog marker and are summarised once a minute.
	rated := ratelog.New(promslog.New(logConfig).Handler(), ratelog.Options{})
	defer rated.Flush()
	logger := slog.New(rated)

	if run, ok := statusCmds[cmd]; ok {
		return run(os.Stdout, os.Stderr)
	}
	switch cmd {
	case discoverCmd.FullCommand():
		return discoverRun(os.Stdout, os.Stderr)
	case schedCmd.FullCommand():
		return schedJob(os.Stdout, os.Stderr)
	case checkCmd.FullCommand():
		return check()
	case serveCmd.FullCommand():
		return serve(logger)
	}
	return 0
}

// addServeCommand adds serve, the default command, and returns what serves
// metrics until jobwatch is stopped.
func addServeCommand(app *kingpin.Application) (*kingpin.CmdClause, func(logger *slog.Logger) int) {
	cmd := app.Command("serve", "Watch the configured sources and serve metrics (the default).").Default()
	configFile := cmd.Flag("config.file", "jobwatch configuration file.").Default("jobwatch.yml").String()
	statePath := cmd.Flag("state.path", "Directory for jobwatch's state (default: data/ beside the config file).").String()
	startupHold := cmd.Flag("sources.startup-hold", "After a start or reload, decide no job's runs (missed, overlapping, ...) for this long, and until every source has read to its end once (docs/schedules.md); 0 for none.").Default(model.DefaultStartupHold.String()).Duration()
	var gogcSet bool
	gogc := cmd.Flag("runtime.gogc", "Go's garbage collection target percentage: the heap may grow this much past what is live before a collection. The GOGC environment variable, when set, is used unless this flag is given (docs/install.md#memory).").Default(strconv.Itoa(defaultGOGC)).IsSetByUser(&gogcSet).Int()
	webOpts := addWebFlags(cmd)
	return cmd, func(logger *slog.Logger) int {
		if *gogc <= 0 {
			logger.Error("--runtime.gogc must be a percentage above 0", "runtime.gogc", *gogc)
			return 2
		}
		setGCPercent(logger, *gogc, gogcSet)
		dir := *statePath
		if dir == "" {
			dir = filepath.Join(filepath.Dir(*configFile), "data")
		}
		if err := serveMetrics(logger, *configFile, dir, *startupHold, webOpts); err != nil {
			logger.Error("jobwatch stopped", "err", err)
			return 1
		}
		return 0
	}
}

// defaultGOGC is serve's garbage collection target, rather than Go's 100:
// a job's state is long-lived and a catch-up changes every job at once,
// so at 100 the heap grew to twice a live set that is at its largest for
// a few seconds (BENCHMARKS.md, "Series and memory per job"). Prometheus
// made the same change (2.53) for the same reason, at little CPU cost.
const defaultGOGC = 50

// setGCPercent sets the garbage collection target to gogc, unless GOGC is
// set in the environment and the flag was not given.
func setGCPercent(logger *slog.Logger, gogc int, flagSet bool) {
	if env, ok := os.LookupEnv("GOGC"); ok && !flagSet {
		logger.Debug("garbage collection target from the environment", "GOGC", env)
		return
	}
	debug.SetGCPercent(gogc)
}

// addCheckCommand adds check-config.
func addCheckCommand(app *kingpin.Application) (*kingpin.CmdClause, func() int) {
	cmd := app.Command("check-config", "Validate a configuration file, reporting every problem at once.")
	file := cmd.Flag("config.file", "jobwatch configuration file.").Default("jobwatch.yml").String()
	return cmd, func() int { return checkConfig(*file) }
}

// addVersionFlag adds --version as kingpin's app.Version does, but formats
// the text only when the flag is given: version.Print parses a template,
// which every jobwatch run would otherwise pay for.
func addVersionFlag(app *kingpin.Application) {
	app.VersionFlag = app.Flag("version", "Show application version.").PreAction(func(*kingpin.ParseContext) error {
		fmt.Println(version.Print("jobwatch"))
		os.Exit(0)
		return nil
	})
	app.VersionFlag.Bool()
}

func checkConfig(path string) int {
	cfg, hostJobs, warnings, err := exporter.Check(context.Background(), path)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root := ""
	if cfg.Discovery.Watch {
		root = cfg.Discovery.Root
	}
	fmt.Println(checkSummary(path, len(cfg.Jobs), hostJobs, root, len(cfg.Sources)))
	return 0
}

// checkSummary is check-config's line for a valid config: "1 job", "2
// jobs"; root is discovery's, "" when jobwatch does not watch the host.
func checkSummary(path string, jobs, hostJobs int, root string, sources int) string {
	if root != "" {
		return fmt.Sprintf("%s: %s (%d of them discovered on the host under %s), %s: OK", path, plural(jobs, "job"), hostJobs, root, plural(sources, "source"))
	}
	return fmt.Sprintf("%s: %s, %s: OK", path, plural(jobs, "job"), plural(sources, "source"))
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func serveMetrics(logger *slog.Logger, configFile, stateDir string, startupHold time.Duration, o *webOptions) error {
	logger.Info("starting jobwatch", "version", version.Info(), "config", configFile, "state", stateDir)
	statusPage := ""
	if o.externalURL != "" {
		statusPage = strings.TrimSuffix(o.externalURL, "/") + "/status"
	}
	if startupHold == 0 {
		startupHold = -1 // none; exporter.Options takes 0 for the default
	}
	exp, err := exporter.New(exporter.Options{ConfigFile: configFile, StateDir: stateDir, Logger: logger, StatusPageURL: statusPage, StartupHold: startupHold})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector("jobwatch"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(exp.ServedCollectors()...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, stop, logger, exp, reg, stateDir, o)
}

// shutdownTimeout bounds the HTTP server's graceful shutdown: connections
// still busy then (a slow scrape, a client that stopped reading) are
// closed, so that a stop never waits out the write timeout.
const shutdownTimeout = 5 * time.Second

// serveUntil serves exp until ctx is done (SIGINT, SIGTERM) or the web
// server fails (it then calls stop), and logs what the final save kept.
func serveUntil(ctx context.Context, stop context.CancelFunc, logger *slog.Logger, exp *exporter.Exporter, reg *prometheus.Registry, stateDir string, o *webOptions) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = exp.Reload() // logged and reported by the exporter
			}
		}
	}()

	mux, err := newMux(reg, exp, logger, o)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- exp.Run(ctx) }()
	srv := newServer(mux, o)
	webErr := make(chan error, 1)
	go func() { webErr <- web.ListenAndServe(srv, o.toolkit, logger) }()
	var err2 error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		shutdownServer(logger, srv, shutdownTimeout)
	case err2 = <-webErr:
		err2 = fmt.Errorf("web server: %w", err2)
		stop()
	}
	runErr := <-done
	if runErr == nil {
		logger.Info("stopped", stoppedAttrs(exp.Saved(), stateDir)...)
	}
	return errors.Join(err2, runErr)
}

// shutdownServer shuts srv down gracefully for at most timeout, then closes
// the connections still open.
func shutdownServer(logger *slog.Logger, srv *http.Server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("HTTP connections still busy after the shutdown deadline; closing them", "timeout", timeout, "err", err)
		_ = srv.Close()
	}
}

// stoppedAttrs say what the state saved at the stop holds: its jobs and
// sources, and the records read from those sources.
func stoppedAttrs(saved *model.Saved, stateDir string) []any {
	var jobs, sources int
	var records uint64
	if saved != nil {
		jobs = len(saved.JobNames())
		for _, src := range saved.Sources() {
			sources++
			records += src.Records
		}
	}
	return []any{"state", stateDir, "jobs_saved", jobs, "sources_saved", sources, "records_read", records}
}

// newServer sets the limits that keep unfinished, oversized and idle
// connections from holding memory and file descriptors.
func newServer(h http.Handler, o *webOptions) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.readHeaderTimeout,
		ReadTimeout:       o.readTimeout,
		WriteTimeout:      o.writeTimeout,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// newMux routes metrics, the lifecycle and health endpoints, profiling when
// enabled, and the landing page.
func newMux(reg *prometheus.Registry, exp *exporter.Exporter, logger *slog.Logger, o *webOptions) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	prefix, err := externalPath(o.externalURL)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	pages := &status.Handler{View: exp, Now: exp.Now, Output: exp.Output, Page: status.PageOptions{Title: "jobwatch on " + host, Prefix: prefix},
		Proposals: func() []status.Proposal {
			var out []status.Proposal
			for _, p := range exp.Proposals() {
				out = append(out, status.Proposal(p))
			}
			return out
		}}
	for _, p := range []string{"/status", "/status/", "/api/v1/jobs", "/api/v1/jobs/"} {
		mux.Handle(p, pages)
	}
	for _, r := range exp.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	// The jobs' metrics are rendered per job, when a job changes, by
	// collector.Handler; the rest comes from reg (ServedCollectors).
	metrics := collector.NewHandler(collector.HandlerOpts{
		Registry: reg,
		Saved:    exp.Saved,
		Now:      exp.Now,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
		Options:  collector.Options{ClassicBuckets: o.classicBuckets},
	})
	mux.Handle(o.metricsPath, promhttp.InstrumentMetricHandler(reg, metrics))
	mux.Handle("/-/reload", reloadHandler(exp.Reload, o.enableLifecycle))
	admin := status.AdminHandler(exp, o.enableAdminAPI, exp.Now, logger)
	mux.Handle(status.PausePath, admin)
	mux.Handle(status.ResumePath, admin)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Healthy") })
	if o.enablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.metricsPath != "/" {
		profiling := "false"
		if o.enablePprof {
			profiling = "true"
		}
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "jobwatch",
			Description: "Prometheus exporter and staleness watchdog for scheduled jobs",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: prefix + "/status", Text: "Status of the jobs"},
				{Address: prefix + "/api/v1/jobs", Text: "Jobs as JSON"},
				{Address: o.metricsPath, Text: "Metrics"},
			},
			Profiling: profiling,
		})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", exp.Root(status.WithPageHeaders(landing)))
	}
	return mux, nil
}

// externalPath is the path of --web.external-url: the status page's links
// start with it.
func externalPath(external string) (string, error) {
	if external == "" {
		return "", nil
	}
	u, err := url.Parse(external)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("--web.external-url %q: want an absolute URL like https://jobwatch.example.org/", external)
	}
	return strings.TrimSuffix(u.Path, "/"), nil
}

// reloadHandler serves /-/reload. Like Prometheus' it is off unless
// --web.enable-lifecycle is given; when on, it takes POST and PUT only and
// refuses requests a browser marks as cross-origin (Sec-Fetch-Site, or an
// Origin that is not the request's host), so that a page on another site
// cannot make a visitor's browser reload jobwatch with a simple form POST.
func reloadHandler(reload func() error, enabled bool) http.Handler {
	if !enabled {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the lifecycle endpoint is disabled: start jobwatch with --web.enable-lifecycle, or send SIGHUP", http.StatusForbidden)
		})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "use POST to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if err := reload(); err != nil {
			http.Error(w, fmt.Sprintf("reload failed, running config kept: %v", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "config reloaded")
	})
	return http.NewCrossOriginProtection().Handler(h)
}
