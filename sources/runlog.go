package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"jobwatch/config"
	"jobwatch/model"
	"jobwatch/sources/record"
	"jobwatch/sources/tail"
)

// RunLog follows a run log: one record a line, in JSON, logfmt, or an
// application's own format read with regular expressions.
type RunLog struct {
	name   string
	path   string
	parser record.Parser
	logger *slog.Logger // with the source's name and path
	// tailLog is the tailer's: it adds the path itself.
	tailLog *slog.Logger
	// waker and healthEvery are for tests.
	waker       tail.Waker
	healthEvery time.Duration
}

var _ Source = (*RunLog)(nil)

// NewRunLog builds a runlog source; its path should be absolute (config.Load
// resolves relative paths against the config file's directory).
func NewRunLog(src config.Source, deps Deps) (*RunLog, error) {
	deps = deps.withDefaults()
	p, err := record.FromConfig(src.RunLog)
	if err != nil {
		return nil, err
	}
	return &RunLog{
		name:        src.Name,
		path:        src.Path,
		parser:      p,
		logger:      deps.Logger.With("source", src.Name, "path", src.Path),
		tailLog:     deps.Logger.With("source", src.Name),
		healthEvery: time.Second,
	}, nil
}

func (r *RunLog) Name() string { return r.name }
func (r *RunLog) Type() string { return config.TypeRunLog }

// Run follows the file from the saved position.
func (r *RunLog) Run(ctx context.Context, from json.RawMessage, sink Sink) error {
	var pos *tail.Position
	if len(from) > 0 {
		pos = new(tail.Position)
		if err := json.Unmarshal(from, pos); err != nil {
			return fmt.Errorf("saved position of %s: %w", r.name, err)
		}
	}
	t := tail.New(r.path, pos, tail.Options{Logger: r.tailLog, Waker: r.waker})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.reportHealth(ctx, t, sink)

	events := make([]model.Event, 0, tail.BatchLines)
	var ev model.Event
	err := t.Run(ctx, func(lines []tail.Line, p tail.Position, resets int) {
		events = events[:0]
		bad := 0
		for _, l := range lines {
			if l.TooLong {
				bad++
				r.logger.Debug("line too long to be a record", "line", l.Number, "bytes_read", len(l.Text))
				continue
			}
			if err := r.parser.Parse(l.Text, &ev); err != nil {
				if errors.Is(err, record.ErrNoMatch) || errors.Is(err, record.ErrEmpty) {
					continue // blank lines, and an application log's other lines
				}
				bad++
				r.logger.Debug("not a record", "line", l.Number, "err", err)
				continue
			}
			events = append(events, ev)
		}
		position, err := json.Marshal(p)
		if err != nil {
			panic(err) // a struct of numbers and a string always marshals
		}
		sink.Apply(model.Batch{Source: r.name, Events: events, ParseErrors: bad, PositionResets: resets, Position: position})
	})
	return err
}

// reportHealth turns the tailer's read error into the source's health,
// logging each change once.
func (r *RunLog) reportHealth(ctx context.Context, t *tail.Tailer, sink Sink) {
	// Every source looks at the same instants, the multiples of
	// healthEvery, so that hundreds of idle sources wake the process once
	// an interval rather than each at its own moment. The first look comes
	// at least a tick after Run starts, once the tailer has tried to open
	// the file.
	d := r.healthEvery
	timer := time.NewTimer(time.Until(time.Now().Add(d).Truncate(d).Add(d)))
	defer timer.Stop()
	reported := false
	var last error
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(time.Until(time.Now().Truncate(d).Add(d)))
		err := t.Err()
		if reported && (err == nil) == (last == nil) && (err == nil || err.Error() == last.Error()) {
			continue
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.logger.Info("run log does not exist yet; waiting for it", "err", err)
		case err != nil:
			r.logger.Warn("run log cannot be read", "err", err)
		case reported:
			r.logger.Info("run log readable again")
		}
		sink.SetHealth(r.name, err == nil, err)
		reported, last = true, err
	}
}
