package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/discover"
	"github.com/jobwatch/jobwatch/sources"
)

// Check validates a config file the way serve would load it, and asks every
// source that can check more than syntax (a database's table and columns)
// to do so, and every service the config turns on (store: mysql's
// table). A source whose server cannot be reached is a warning, not an
// error: the config may be right, the network down. In host mode
// (discovery.watch) cfg has the host's jobs too, hostJobs of them.
func Check(ctx context.Context, path string) (cfg *config.Config, hostJobs int, warnings []string, err error) {
	cfg, text, err := config.Read(path)
	if err != nil {
		return nil, 0, nil, err
	}
	if cfg.Discovery.Watch {
		s, err := scanHost(cfg, text, nil, discover.Options{Now: time.Now()}, "")
		if err == nil {
			cfg, err = s.config(path)
		}
		if err != nil {
			return nil, 0, nil, fmt.Errorf("discovery: %w", err)
		}
		hostJobs = len(s.report.Unwatched)
	}
	jobs, err := JobSpecs(cfg, nil)
	if err != nil {
		return nil, 0, nil, err
	}
	for _, j := range cfg.Jobs {
		for _, w := range j.ScheduleSpec().Warnings(nil, time.Now()) {
			warnings = append(warnings, fmt.Sprintf("job %q: %s", j.Name, w))
		}
	}
	warnings = append(warnings, waitWarnings(cfg, jobs, time.Now())...)
	deps := sourceDeps(cfg, slog.New(slog.DiscardHandler), time.Now)
	var errs []error
	for _, sc := range cfg.Sources {
		what := fmt.Sprintf("source %q", sc.Name)
		src, err := sources.New(sc, deps)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if c, ok := src.(sources.Checker); ok {
			warnings, errs = checkOne(ctx, what, c.Check, warnings, errs)
		}
	}
	for _, typ := range sources.Services() {
		if typ.Check != nil && typ.Enabled(cfg) {
			warnings, errs = checkOne(ctx, typ.Block, func(ctx context.Context) error { return typ.Check(ctx, cfg) }, warnings, errs)
		}
	}
	return cfg, hostJobs, warnings, config.Join(errs...)
}

// checkOne runs one source's or service's check, what naming it (`source
// "db"`, `checkins`), and adds what it says to the warnings or the errors.
func checkOne(ctx context.Context, what string, check func(context.Context) error, warnings []string, errs []error) ([]string, []error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := check(cctx)
	cancel()
	switch {
	case errors.Is(err, sources.ErrUnreachable):
		warnings = append(warnings, fmt.Sprintf("%s: not checked against the server: %v", what, err))
	case errors.As(err, new(sources.Warning)):
		warnings = append(warnings, fmt.Sprintf("%s: %v", what, err))
	case err != nil:
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	return warnings, errs
}
