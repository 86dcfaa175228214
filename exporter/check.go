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
// to do so. A source whose server cannot be reached is a warning, not an
// error: the config may be right, the network down. In host mode
// (discovery.watch) cfg has the host's jobs too, hostJobs of them.
func Check(ctx context.Context, path string) (cfg *config.Config, hostJobs int, warnings []string, err error) {
	cfg, text, err := config.Read(path)
	if err != nil {
		return nil, 0, nil, err
	}
	if cfg.Discovery.Watch {
		s, err := scanHost(cfg, text, discover.Options{Now: time.Now()}, "")
		if err == nil {
			cfg, err = s.config(path)
		}
		if err != nil {
			return nil, 0, nil, fmt.Errorf("discovery: %w", err)
		}
		hostJobs = len(s.report.Unwatched)
	}
	if _, err := JobSpecs(cfg, nil); err != nil {
		return nil, 0, nil, err
	}
	for _, j := range cfg.Jobs {
		for _, w := range j.ScheduleSpec().Warnings(nil, time.Now()) {
			warnings = append(warnings, fmt.Sprintf("job %q: %s", j.Name, w))
		}
	}
	deps := sourceDeps(cfg, slog.New(slog.DiscardHandler), time.Now)
	var errs []error
	for _, sc := range cfg.Sources {
		src, err := sources.New(sc, deps)
		if err != nil {
			errs = append(errs, fmt.Errorf("source %q: %w", sc.Name, err))
			continue
		}
		c, ok := src.(sources.Checker)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = c.Check(cctx)
		cancel()
		switch {
		case errors.Is(err, sources.ErrUnreachable):
			warnings = append(warnings, fmt.Sprintf("source %q: not checked against the server: %v", sc.Name, err))
		case errors.As(err, new(sources.Warning)):
			warnings = append(warnings, fmt.Sprintf("source %q: %v", sc.Name, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("source %q: %w", sc.Name, err))
		}
	}
	return cfg, hostJobs, warnings, config.Join(errs...)
}
