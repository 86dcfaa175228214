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
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

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

	"jobwatch/exporter"
)

// defaultPort lies outside 9100-9999, which Prometheus' default port
// allocation list has given out entirely.
const defaultPort = ":10474"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	app := kingpin.New("jobwatch", "Prometheus exporter and staleness watchdog for scheduled jobs.")
	app.Version(version.Print("jobwatch"))
	app.HelpFlag.Short('h')
	logConfig := &promslog.Config{}
	flag.AddFlags(app, logConfig)

	serve := app.Command("serve", "Watch the configured sources and serve metrics (the default).").Default()
	configFile := serve.Flag("config.file", "jobwatch configuration file.").Default("jobwatch.yml").String()
	statePath := serve.Flag("state.path", "Directory for jobwatch's state (default: data/ beside the config file).").String()
	metricsPath := serve.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	webConfig := kingpinflag.AddFlags(serve, defaultPort)

	check := app.Command("check-config", "Validate a configuration file, reporting every problem at once.")
	checkFile := check.Flag("config.file", "jobwatch configuration file.").Default("jobwatch.yml").String()

	runCmd, runJob := addRunCommand(app)
	schedCmd, schedJob := addScheduleCommand(app)
	discoverCmd, discoverRun := addDiscoverCommand(app)

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobwatch: %v (try --help)\n", err)
		return 2
	}
	logger := promslog.New(logConfig)

	switch cmd {
	case discoverCmd.FullCommand():
		return discoverRun(os.Stdout, os.Stderr)
	case schedCmd.FullCommand():
		return schedJob(os.Stdout, os.Stderr)
	case runCmd.FullCommand():
		return runJob()
	case check.FullCommand():
		return checkConfig(*checkFile)
	case serve.FullCommand():
		dir := *statePath
		if dir == "" {
			dir = filepath.Join(filepath.Dir(*configFile), "data")
		}
		if err := serveMetrics(logger, *configFile, dir, *metricsPath, webConfig); err != nil {
			logger.Error("jobwatch stopped", "err", err)
			return 1
		}
	}
	return 0
}

func checkConfig(path string) int {
	cfg, warnings, err := exporter.Check(context.Background(), path)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s: %d jobs, %d sources: OK\n", path, len(cfg.Jobs), len(cfg.Sources))
	return 0
}

func serveMetrics(logger *slog.Logger, configFile, stateDir, metricsPath string, webConfig *web.FlagConfig) error {
	logger.Info("starting jobwatch", "version", version.Info(), "config", configFile, "state", stateDir)
	exp, err := exporter.New(exporter.Options{ConfigFile: configFile, StateDir: stateDir, Logger: logger})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector("jobwatch"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(exp.Collectors()...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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

	mux := http.NewServeMux()
	mux.Handle(metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError), Registry: reg}))
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "use POST to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if err := exp.Reload(); err != nil {
			http.Error(w, fmt.Sprintf("reload failed, running config kept: %v", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "config reloaded")
	})
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Healthy") })
	if metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "jobwatch",
			Description: "Prometheus exporter and staleness watchdog for scheduled jobs",
			Version:     version.Info(),
			Links:       []web.LandingLinks{{Address: metricsPath, Text: "Metrics"}},
		})
		if err != nil {
			return err
		}
		mux.Handle("/", landing)
	}

	done := make(chan error, 1)
	go func() { done <- exp.Run(ctx) }()
	srv := &http.Server{Handler: mux}
	webErr := make(chan error, 1)
	go func() { webErr <- web.ListenAndServe(srv, webConfig, logger) }()
	var err2 error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		_ = srv.Shutdown(context.Background())
	case err2 = <-webErr:
		err2 = fmt.Errorf("web server: %w", err2)
		stop()
	}
	return errors.Join(err2, <-done)
}
