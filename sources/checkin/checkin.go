// Package checkin is the `checkin` source: jobs that cannot write a local
// log (a container, a CI pipeline, a laptop's backup) report their runs over
// HTTP, in the URL shapes hosted cron monitors use:
//
//	/ping/JOB            a run ends with success
//	/ping/JOB/start      a run starts
//	/ping/JOB/fail       a run ends with failure
//	/ping/JOB/EXIT_CODE  a run ends with that exit code (0 is success)
//	/ping/JOB/skip       a run was skipped (?reason=)
//
// A Receiver answers them: it appends each to a spool in the state directory
// and fsyncs it before it answers. The Source reads the spool from its saved
// position into events, like every other source, so nothing acknowledged is
// lost or counted twice across a kill -9.
package checkin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Type is the source's type and name in the jobwatch_source_* metrics.
const Type = "checkin"

// DefaultMaxBody bounds a check-in's request body.
const DefaultMaxBody = 100 << 10

// LateWindow is the check-in source's late window (model.SourceSpec's):
// a check-in is stamped when the receiver takes it and handed over as soon
// as it is on disk, so it is handed over at most this long after its time;
// a constant rather than a config key.
const LateWindow = time.Second

// Options configure a Receiver.
type Options struct {
	// Dir is the spool directory, inside the state directory.
	Dir string
	// Prefix is the URL path the check-ins are under; default "/ping/".
	Prefix string
	// MaxBody bounds a request body; default DefaultMaxBody.
	MaxBody int64
	// MaxSegment is the size of a spool segment; default 64 MiB.
	MaxSegment int64
	Now        func() time.Time
	Logger     *slog.Logger
	// OnReject is called with the reason of every refused check-in.
	OnReject func(reason string)
	// Reload loads the config again, once ?create=1 created a job, so
	// that the job is watched; nil: the job waits for the next load.
	Reload func() error
	// OnNotSaved is called with the store (StoreSpool or
	// StoreMySQL) of every check-in answered 503, not stored.
	OnNotSaved func(store string)
}

// Receiver answers check-ins. It lives as long as jobwatch does; reloads
// change the jobs it accepts.
type Receiver struct {
	opts    Options
	spool   *spool
	dedup   *recent
	routes  atomic.Pointer[routes]
	maxBody atomic.Int64
	kept    kept // where the outputs of the jobs' latest runs are
	// table, when the config says store: mysql, is where check-ins go
	// instead of the spool (tablestore.go).
	table   atomic.Pointer[tableStore]
	tableMu sync.Mutex // opening and closing table
	// storeErr is why store: mysql could not be opened, or nil.
	storeErr atomic.Pointer[error]
	// createRule is checkins.create, nil when off; created are the jobs
	// it made (create.go).
	createRule atomic.Pointer[createRule]
	created    *created
	// madeJobs are the jobs created as the config last loaded watches
	// them; proposed the jobs Sentry monitor_configs described (both
	// shown on the status page: proposals.go).
	madeJobs atomic.Pointer[[]config.Job]
	proposed proposed
}

// OpenReceiver opens the spool. It accepts no job until SetJobs.
func OpenReceiver(o Options) (*Receiver, error) {
	if o.Prefix == "" {
		o.Prefix = "/ping/"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnReject == nil {
		o.OnReject = func(string) {}
	}
	if o.OnNotSaved == nil {
		o.OnNotSaved = func(string) {}
	}
	sp, err := openSpool(o.Dir, o.MaxSegment)
	if err != nil {
		return nil, err
	}
	made, err := readCreated(o.Dir)
	if err != nil {
		sp.Close()
		return nil, err
	}
	r := &Receiver{opts: o, spool: sp, dedup: newRecent(), created: &created{dir: o.Dir, jobs: made}}
	r.SetJobs(nil)
	r.SetMaxBody(o.MaxBody)
	if err := r.rememberSaved(); err != nil {
		sp.Close()
		return nil, err
	}
	return r, nil
}

// rememberSaved reads the newest two spool segments for the run ids
// already acknowledged, so that a retry after a restart is not applied
// twice: a retry of a check-in made just before the newest segment was
// started is in the one before it.
func (r *Receiver) rememberSaved() error {
	segs, err := segments(r.opts.Dir)
	if err != nil {
		return fmt.Errorf("check-in spool: %w", err)
	}
	pos := Position{Segment: r.spool.seg}
	if len(segs) >= 2 {
		pos.Segment = segs[len(segs)-2]
	}
	for {
		lines, next, err := readFrom(r.opts.Dir, pos, 4096)
		if err != nil {
			return fmt.Errorf("check-in spool: %w", err)
		}
		for _, line := range lines {
			var rec spoolRecord
			if json.Unmarshal(line, &rec) == nil && rec.RunID != "" {
				r.dedup.saved(dedupKey{job: rec.Job, rid: rec.RunID, event: rec.Event})
			}
		}
		if len(lines) == 0 {
			return nil
		}
		pos = next
	}
}

// SetMaxBody sets the largest request body accepted (<= 0: the default).
func (r *Receiver) SetMaxBody(n int64) {
	if n <= 0 {
		n = DefaultMaxBody
	}
	r.maxBody.Store(n)
}

// SetJobs sets the jobs whose check-ins are accepted, by name only.
func (r *Receiver) SetJobs(jobs []string) { r.routes.Store(routesOf(jobs, nil, Config{})) }

// SetRoutes sets the jobs whose check-ins are accepted, under their names
// and aliases (jobs' Aliases), and the keys and paths of c.
func (r *Receiver) SetRoutes(accepted []string, jobs []config.Job, c Config) {
	r.routes.Store(routesOf(accepted, jobs, c))
}

// Close stops accepting check-ins (they are answered 503) and closes the
// spool, once what was acknowledged is on disk.
func (r *Receiver) Close() error {
	r.tableMu.Lock()
	defer r.tableMu.Unlock()
	var err error
	if t := r.table.Swap(nil); t != nil {
		err = t.Close()
	}
	return errors.Join(err, r.spool.Close())
}

// Source returns the source that reads the receiver's spool.
func (r *Receiver) Source() *Source { return &Source{r: r} }

// Source reads the spool of acknowledged check-ins into events.
type Source struct{ r *Receiver }

var _ sources.Source = (*Source)(nil)

// Name is "checkin": there is one check-in receiver.
func (s *Source) Name() string { return Type }

// Type is "checkin".
func (s *Source) Type() string { return Type }

// batchLines bounds the check-ins applied in one batch.
const batchLines = 1000

// Run applies the spool from position from until ctx is done. A batch
// that reads the spool to its end says AtEnd: every check-in's, and the
// last of the replay at start; when the spool has nothing (more) to read
// after a batch that did not say it, or at start, a batch says it alone.
func (s *Source) Run(ctx context.Context, from json.RawMessage, sink sources.Sink) error {
	pos, err := s.resume(from)
	if err != nil {
		return err
	}
	up := false
	atEnd := false // the last batch handed over said AtEnd
	for {
		changed := s.r.spool.Changed() // before reading, not to miss a commit
		lines, next, err := readLines(s.r.opts.Dir, pos, batchLines)
		if err != nil {
			if up {
				s.r.opts.Logger.Error("reading the check-in spool", "err", err)
			}
			up = false
			sink.SetHealth(Type, false, err)
			if !sources.Sleep(ctx, time.Second) {
				return nil
			}
			continue
		}
		if !up {
			up = true
			sink.SetHealth(Type, true, nil)
		}
		if len(lines) > 0 {
			b := s.batchOf(lines, next)
			atEnd = b.AtEnd
			sink.Apply(b)
			if next.Segment != pos.Segment {
				// The segment just finished stays until the next one is
				// finished too: the saved position may still name it.
				s.removeApplied(pos.Segment)
			}
			pos = next
			if len(lines) == batchLines {
				continue
			}
		} else if !atEnd {
			// No position: nothing new to save.
			atEnd = true
			sink.Apply(model.Batch{Source: Type, AtEnd: true})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// resume is the position to read from, the saved one: the segments
// before it have been applied and saved, and are removed but for those
// holding the outputs of the jobs' latest runs.
func (s *Source) resume(from json.RawMessage) (Position, error) {
	var pos Position
	if from != nil {
		if err := json.Unmarshal(from, &pos); err != nil {
			return pos, fmt.Errorf("check-in position %s: %w", from, err)
		}
	}
	if err := s.r.kept.remember(s.r.opts.Dir, pos); err != nil {
		s.r.opts.Logger.Warn("reading the outputs kept in the check-in spool", "err", err)
	}
	s.removeApplied(pos.Segment)
	return pos, nil
}

// removeApplied removes the segments before seg that hold no kept output.
func (s *Source) removeApplied(seg int) {
	if err := removeBefore(s.r.opts.Dir, s.r.kept.from(seg)); err != nil {
		s.r.opts.Logger.Warn("removing applied check-in spool segments", "err", err)
	}
}

// batchOf is the batch of spool lines read up to next. Fewer lines than a
// batch holds read the spool to its end: the batch says AtEnd.
// An output is handed over as a reference to its line (outputRef).
func (s *Source) batchOf(lines []spoolLine, next Position) model.Batch {
	b := model.Batch{Source: Type, Events: make([]model.Event, 0, len(lines)), AtEnd: len(lines) < batchLines}
	for _, line := range lines {
		ev, err := decode(line.data)
		if errors.Is(err, errNoRun) {
			continue
		}
		if err != nil {
			b.ParseErrors++
			continue
		}
		if ev.Output != "" {
			ev.Output, ev.OutputRef = "", outputRef(line.at)
			s.r.kept.add(ev.Job, line.at)
		}
		b.Events = append(b.Events, ev)
	}
	b.Position, _ = json.Marshal(next)
	return b
}

// errNoRun is decode's answer to a record that is no event of a run (a
// Healthchecks /log): it is read past, not counted as a parse error.
var errNoRun = errors.New("check-in of no run")

// decode turns a spool line into an event.
func decode(line []byte) (model.Event, error) {
	var rec spoolRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return model.Event{}, err
	}
	if rec.V != spoolVersion {
		return model.Event{}, fmt.Errorf("check-in spool record version %d, this jobwatch reads %d", rec.V, spoolVersion)
	}
	ev := model.Event{Time: rec.Time, Job: rec.Job, Host: rec.Host, PID: rec.PID, RunID: rec.RunID, Output: rec.Output}
	switch rec.Event {
	case "start":
		ev.Kind = model.Start
	case "end":
		ev.Kind = model.End
		res, ok := model.ParseStatus(rec.Status)
		if !ok {
			return model.Event{}, fmt.Errorf("check-in status %q", rec.Status)
		}
		ev.Result = res
		if rec.ExitCode != nil {
			ev.ExitCode, ev.HasExitCode = *rec.ExitCode, true
		}
	case "skip":
		ev.Kind = model.Skip
		ev.Reason, ev.SkipLabel = rec.Reason, rec.Reason // one of model.SkipReasons
	case eventLog:
		return model.Event{}, errNoRun
	default:
		return model.Event{}, errors.New("check-in event " + rec.Event)
	}
	if ev.Job == "" || ev.Time.IsZero() {
		return model.Event{}, errors.New("check-in without job or time")
	}
	return ev, nil
}
