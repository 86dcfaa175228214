// Package sources is the contract between jobwatch and the places it reads
// runs from: a Source turns outside records (run logs, job_runs tables, the
// systemd journal) into model events and hands them to a Sink. A source
// knows nothing of Prometheus.
//
// Each kind of source is a package of its own (sources/runlog,
// sources/mysql, sources/journal) that owns its config block, its
// validation, its identity, its position and its checks, and registers
// itself from its init function:
//
//	func init() { sources.Register("mysql", decode) }
//
// sources/all imports every such package; adding a kind of source is one
// new package and one line there. A source that observes more than runs
// (lock states) also registers the kind of what it observes with
// observation.Register, and hands observations over with its batches; the
// model, the collector and the status page render them by their kind.
package sources

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/jobwatch/jobwatch/model"
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

// RunReporter is implemented by the Config of a source that reports runs
// (a lock probe's does not). LateWindow is how late, in event time, the
// source may hand over a record: how far behind the latest record it has
// read (or, once it has read to its end, behind the clock) its watermark
// is. Jobs' slots are decided only up to the lowest watermark of the
// sources that report them (docs/schedules.md).
type RunReporter interface {
	LateWindow() time.Duration
}

// Waiter is implemented by the Config of a source of runs whose watermark
// trails the clock by more than its late window while it is at its end (a
// table polled). Wait is how far it usually trails; check-config warns of
// a job whose period is shorter than twice the wait of a source.
type Waiter interface {
	Wait() time.Duration
}

// WaitOf is how far behind the clock a source of runs' watermark usually
// is: its Wait, else its late window.
func WaitOf(r RunReporter) time.Duration {
	if w, ok := r.(Waiter); ok {
		return w.Wait()
	}
	return r.LateWindow()
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

// WithDefaults fills what d leaves unset: a logger that discards, and
// time.Now.
func (d Deps) WithDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// Sleep waits d, or less if ctx is done first; it reports whether ctx is
// still live. Sources retry with it, and tests replace it to step time.
func Sleep(ctx context.Context, d time.Duration) bool {
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

// ErrUnreachable marks a Check that could not reach what it checks (a
// database server): the config may be right, it could not be verified.
// check-config reports it as a warning, not an error.
var ErrUnreachable = errors.New("unreachable")

// Warning is a Check's advice: the config works, but not as well as it
// could (a table without the index its queries need). check-config prints
// it as a warning, not an error.
type Warning string

func (w Warning) Error() string { return string(w) }
