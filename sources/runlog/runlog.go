// Package runlog reads a run log: one record a line, in JSON, logfmt, or an
// application's own format read with regular expressions, followed across
// rotation and truncation by the tailer of package tail and parsed by
// package record. Its saved position is the tailer's (file identity and
// offset); its identity is the path.
package runlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
	"github.com/jobwatch/jobwatch/sources/runlog/tail"
)

// Source follows a run log.
type Source struct {
	name   string
	path   string
	cfg    record.Config
	parser record.Parser
	logger *slog.Logger // with the source's name and path
	// tailLog is the tailer's: it adds the path itself.
	tailLog *slog.Logger
	// waker and healthEvery are for tests.
	waker       tail.Waker
	healthEvery time.Duration
}

var (
	_ sources.Source  = (*Source)(nil)
	_ sources.Checker = (*Source)(nil)
)

// Check warns, for check-config, when cron's log level (format cron) lets
// jobs be seen only in part: only starting, or never failing.
func (r *Source) Check(context.Context) error {
	if r.cfg.Format != "cron" {
		return nil
	}
	if w := CronLevelWarning(r.cfg.LogLevel()); w != "" {
		return sources.Warning(w)
	}
	return nil
}

// CronLevelWarning says what jobs read from cron's own log at Debian cron's
// -L level cannot show, or "" when they show everything.
func CronLevelWarning(level int) string {
	gaps := cronlog.LevelGaps(level)
	if gaps == "" {
		return ""
	}
	return fmt.Sprintf("cron_log_level %d: %s; %s, then set cron_log_level: 15, or run the jobs through jobwatch run", level, gaps, cronlog.LevelFix)
}

// New builds a runlog source named name; its path should be absolute (the
// config's decoder resolves relative paths against the config file's
// directory).
func New(name string, c Config, deps sources.Deps) (*Source, error) {
	deps = deps.WithDefaults()
	p, err := record.FromConfig(c.Config)
	if err != nil {
		return nil, err
	}
	if cp, ok := p.(*record.Cron); ok {
		cp.SetNow(deps.Now) // the year of syslog's timestamps
	}
	return &Source{
		name:        name,
		path:        c.Path,
		cfg:         c.Config,
		parser:      p,
		logger:      deps.Logger.With("source", name, "path", c.Path),
		tailLog:     deps.Logger.With("source", name),
		healthEvery: time.Second,
	}, nil
}

func (r *Source) Name() string { return r.name }
func (r *Source) Type() string { return Type }

// Run follows the file from the saved position. Each pass of the tailer
// that handed batches over, and its first pass after Run starts, ends with
// a batch that says AtEnd (see endMarker).
func (r *Source) Run(ctx context.Context, from json.RawMessage, sink sources.Sink) error {
	var pos *tail.Position
	if len(from) > 0 {
		pos = new(tail.Position)
		if err := json.Unmarshal(from, pos); err != nil {
			return fmt.Errorf("saved position of %s: %w", r.name, err)
		}
	}
	// Records are parsed on this goroutine while the batch before them is
	// applied on another: in a catch-up each is about half of the work, and
	// they run on two cores. Batches are applied in order, each with its
	// position; before the tailer waits, and before Run returns, every batch
	// handed over has been applied. Two event buffers take turns, so one
	// batch at most waits. A small batch (a stream's) is applied here, after
	// those handed over: handing it to the other goroutine and waiting for
	// it cost two wake-ups a write and saved nothing.
	var pending sync.WaitGroup
	end := &endMarker{name: r.name, sink: sink, pending: &pending, unsent: true}
	t := tail.New(r.path, pos, tail.Options{Logger: r.tailLog, Waker: r.waker, Idle: end.idle})
	end.tailer = t

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.reportHealth(ctx, t, sink)

	batches := make(chan model.Batch, 1)
	buffers := make(chan []model.Event, 2)
	buffers <- nil
	buffers <- nil
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for b := range batches {
			sink.Apply(b)
			buffers <- b.Events
			pending.Done()
		}
	}()
	err := t.Run(ctx, func(lines []tail.Line, p tail.Position, resets int) {
		events, bad := r.parse(lines, <-buffers)
		// Each batch gets its own slice: the model keeps the position.
		position := p.AppendJSON(make([]byte, 0, tail.PositionJSONBytes))
		end.unsent = true
		b := model.Batch{Source: r.name, Events: events, ParseErrors: bad, PositionResets: resets, Position: position}
		if len(lines) < applyHereBelow {
			pending.Wait()
			sink.Apply(b)
			buffers <- b.Events
			return
		}
		pending.Add(1)
		batches <- b
	})
	close(batches)
	<-applied
	return err
}

// applyHereBelow is the size of batch, in lines, below which Run applies
// a batch on the tailer's goroutine: a catch-up's batches are BatchLines.
const applyHereBelow = tail.BatchLines / 16

// parse parses lines into buf's storage, returning the events and how many
// lines were not records.
func (r *Source) parse(lines []tail.Line, buf []model.Event) (events []model.Event, bad int) {
	// Each record is parsed in its place in the batch: an Event is about
	// 250 bytes, and copying it in would cost as much as parsing.
	events = slices.Grow(buf[:0], len(lines))
	for _, l := range lines {
		if l.TooLong {
			bad++
			r.logger.Debug("line too long to be a record", "line", l.Number, "bytes_read", len(l.Text))
			continue
		}
		events = events[:len(events)+1]
		if err := r.parser.Parse(l.Text, &events[len(events)-1]); err != nil {
			events = events[:len(events)-1]
			if errors.Is(err, record.ErrNoMatch) || errors.Is(err, record.ErrEmpty) {
				continue // blank lines, and an application log's other lines
			}
			bad++
			r.logger.Debug("not a record", "line", l.Number, "err", err)
		}
	}
	return events, bad
}

// endMarker hands over the batches that say AtEnd: the tailer is idle once
// it has read to the end of its file (or found none), and there, once every
// batch before has been applied, one batch says so. It is sent after each
// pass that handed something over, and after the first pass of a Run even
// with nothing to read, not at every idle wake-up: hundreds of idle sources
// stay cheap. It carries no position, so the state is not saved for it.
// Its fields are Run's goroutine's, as are the tailer's callback and Idle.
type endMarker struct {
	name    string
	sink    sources.Sink
	pending *sync.WaitGroup // the batches handed over and not yet applied
	tailer  *tail.Tailer
	unsent  bool // a batch was handed over since the last AtEnd, or none was sent yet
}

// idle is the tailer's Idle hook.
func (m *endMarker) idle() {
	m.pending.Wait()
	if !m.unsent {
		return
	}
	// A file that is not there has nothing to read; one that cannot be read
	// (permissions, not a regular file) may hold records: the source is not
	// at its end until it has read them.
	if err := m.tailer.Err(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
	m.unsent = false
	m.sink.Apply(model.Batch{Source: m.name, AtEnd: true})
}

// reportHealth turns the tailer's read error into the source's health,
// logging each change once.
func (r *Source) reportHealth(ctx context.Context, t *tail.Tailer, sink sources.Sink) {
	h := sources.NewHealth(r.name, sink, r.logger)
	h.DownMsg, h.DownLevel, h.UpMsg = "run log cannot be read", slog.LevelWarn, "run log readable again"
	// Every source looks at the same instants, the multiples of
	// healthEvery, so that hundreds of idle sources wake the process once
	// an interval rather than each at its own moment. The first look comes
	// at least a tick after Run starts, once the tailer has tried to open
	// the file.
	d := r.healthEvery
	timer := time.NewTimer(time.Until(time.Now().Add(d).Truncate(d).Add(d)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(time.Until(time.Now().Truncate(d).Add(d)))
		if err := t.Err(); err != nil {
			// A run log not written yet is the normal state of a fresh
			// install: info, with the path it waits for; any other error
			// is a warning.
			h.DownMsg, h.DownLevel = "run log cannot be read", slog.LevelWarn
			if errors.Is(err, fs.ErrNotExist) {
				h.DownMsg, h.DownLevel = "run log does not exist yet; waiting for it", slog.LevelInfo
			}
			h.Down("", err)
		} else {
			h.Up()
		}
	}
}
