// Package sources turns what scheduled jobs leave behind (run logs, job_runs
// tables, the systemd journal) into model events. A source knows nothing of
// Prometheus: it hands batches of events to a Sink.
package sources

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"jobwatch/model"
)

// Sink receives what a source reads. *model.Tracker implements it.
type Sink interface {
	// Apply applies a batch's events and stores its position atomically.
	Apply(model.Batch)
	// SetHealth reports whether the source can be read now; err says why not.
	SetHealth(source string, up bool, err error)
}

// Source reads one kind of outside record.
type Source interface {
	Name() string
	Type() string
	// Run reads records until ctx is done, starting after position from,
	// which is the Position of the last batch applied (nil on first start).
	// It returns nil when ctx is done; it retries read errors itself.
	Run(ctx context.Context, from json.RawMessage, sink Sink) error
}

// Checker is implemented by sources that can check more of their config than
// its syntax (a database's table and columns) for `jobwatch check-config`.
type Checker interface {
	Check(ctx context.Context) error
}

// Deps is what every source constructor gets besides its own config.
type Deps struct {
	Logger *slog.Logger
	Now    func() time.Time
	// Jobs lists the configured job names, for sources that look up each
	// job's history on first start.
	Jobs []string
}

func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// SleepCtx is sleepCtx, for source packages.
func SleepCtx(ctx context.Context, d time.Duration) bool { return sleepCtx(ctx, d) }

// sleepCtx waits d, or less if ctx is done first; it reports whether ctx is
// still live. Sources retry with it, and tests replace it to step time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
