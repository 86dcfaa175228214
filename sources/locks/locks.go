// Package locks is the `locks` source: it probes the locks that keep a job
// from overlapping itself (flock files, PID lock files, Redis keys, MySQL
// GET_LOCK names) and reports who holds each and whether the holder is
// alive. Probing only reads: it never takes, renews or deletes a lock.
package locks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/jobwatch/jobwatch/internal/procfs"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Type is the source type in jobwatch.yml.
const Type = "locks"

// Lock kinds, the values of State.Kind.
const (
	kindFlock   = "flock"
	kindPIDFile = "pidfile"
	kindRedis   = "redis"
	kindMySQL   = "mysql"
)

const (
	// DefaultInterval is how often every lock is probed.
	DefaultInterval = 10 * time.Second
	// maxProbeTime bounds one probe of a server (Source.probeTimeout); a
	// server that does not answer delays no other lock's probe.
	maxProbeTime = 5 * time.Second
)

// The two shapes of probe: local ones read the kernel's and the file
// system's view; network ones ask a server.
type fileProber interface {
	probe(now time.Time) (State, error)
}

type netProber interface {
	probe(ctx context.Context, now time.Time) (State, error)
}

// lock is one configured lock with its probe and its error count.
type lock struct {
	job, label string
	kind       string
	file       fileProber
	net        netProber
	errors     uint64
}

// Source probes a set of locks every interval.
type Source struct {
	name     string
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	locks    []*lock
	closers  []func() error
	// wait sleeps d or until ctx is done (false); tests replace it to step
	// rounds.
	wait func(ctx context.Context, d time.Duration) bool
}

var _ sources.Source = (*Source)(nil)

// Name is the source's configured name.
func (s *Source) Name() string { return s.name }

// Type is "locks".
func (s *Source) Type() string { return Type }

// Run probes until ctx is done. It saves no position: lock states are what
// is true now.
//
// Every lock is probed in a goroutine of its own, started each interval
// unless its last probe is still in flight, so that a server that does not
// answer holds back no other lock; its probe ends at the probe timeout
// (min(5 s, interval)). A batch of every lock's latest state goes to the
// sink as soon as a probe ends, the first once every lock has been probed
// (a lock not probed yet is not shown as free).
func (s *Source) Run(ctx context.Context, _ json.RawMessage, sink sources.Sink) error {
	defer s.close()
	health := sources.NewHealth(s.name, sink, s.log)
	health.DownMsg, health.DownLevel, health.UpMsg = "lock probe failed", slog.LevelWarn, "lock probes succeed again"
	r := s.newRounds()
	ctx, cancel := context.WithCancel(ctx)
	// Cancelled first, then waited for: no probe outlives Run, nor uses a
	// client after close.
	defer r.wg.Wait()
	defer cancel()
	ticks := s.ticks(ctx, &r.wg)
	r.start(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
			r.start(ctx)
		case res := <-r.results:
			r.record(res)
			r.drain()
			if ctx.Err() != nil {
				return nil // what a cancelled probe saw is no answer
			}
			if r.unprobed > 0 {
				continue
			}
			states, err := r.batch()
			sink.Apply(model.Batch{Source: s.name, Observations: observations(states)})
			if err != nil {
				health.Down("", err)
			} else {
				health.Up()
			}
		}
	}
}

// ticks sends every interval (s.wait's) until ctx is done.
func (s *Source) ticks(ctx context.Context, wg *sync.WaitGroup) <-chan struct{} {
	ticks := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for s.wait(ctx, s.interval) {
			select {
			case ticks <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ticks
}

// rounds is what one Run knows of its locks: each one's latest state and
// error, and whether a probe of it is in flight. Only Run's goroutine
// touches it; the probes send their results.
type rounds struct {
	s        *Source
	states   []State
	errs     []error
	inflight []bool
	probed   []bool // a result has been recorded
	unprobed int    // locks without a result yet
	// results has room for one result per lock, and a lock has at most
	// one probe in flight: a probe never waits to deliver, even once Run
	// has returned.
	results chan probeResult
	wg      sync.WaitGroup
}

type probeResult struct {
	i   int
	st  State
	err error
}

func (s *Source) newRounds() *rounds {
	r := &rounds{s: s, states: make([]State, len(s.locks)), errs: make([]error, len(s.locks)),
		inflight: make([]bool, len(s.locks)), probed: make([]bool, len(s.locks)), results: make(chan probeResult, len(s.locks)), unprobed: len(s.locks)}
	for i, l := range s.locks {
		r.states[i] = State{Job: l.job, Lock: l.label, Kind: l.kind}
	}
	return r
}

// start probes every lock whose last probe has ended.
func (r *rounds) start(ctx context.Context) {
	for i, l := range r.s.locks {
		if r.inflight[i] {
			continue
		}
		r.inflight[i] = true
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			st, err := r.s.probe(ctx, l)
			r.results <- probeResult{i: i, st: st, err: err}
		}()
	}
}

// probe probes l once, a server for at most the probe timeout.
func (s *Source) probe(ctx context.Context, l *lock) (State, error) {
	now := s.now()
	if l.file != nil {
		return l.file.probe(now)
	}
	pctx, cancel := context.WithTimeout(ctx, s.probeTimeout())
	defer cancel()
	return l.net.probe(pctx, now)
}

// probeTimeout bounds one probe of a server: maxProbeTime, or the interval
// when shorter, so that a probe ends before the next one is due.
func (s *Source) probeTimeout() time.Duration { return min(maxProbeTime, s.interval) }

// record keeps a probe's result as its lock's latest state.
func (r *rounds) record(res probeResult) {
	l := r.s.locks[res.i]
	r.inflight[res.i] = false
	if !r.probed[res.i] {
		r.probed[res.i] = true
		r.unprobed--
	}
	st := res.st
	r.errs[res.i] = nil
	if res.err != nil {
		l.errors++
		r.errs[res.i] = fmt.Errorf("lock %q of job %q: %w", l.label, l.job, res.err)
		// What a failed probe saw is not known: report the lock as not
		// seen held rather than carry an old answer on.
		st = State{Kind: st.Kind}
	}
	st.Job, st.Lock, st.ProbeErrors = l.job, l.label, l.errors
	r.states[res.i] = st
}

// drain records the results that have arrived meanwhile, so that probes
// ending together make one batch.
func (r *rounds) drain() {
	for {
		select {
		case res := <-r.results:
			r.record(res)
		default:
			return
		}
	}
}

// batch is every lock's latest state, and the first lock's error in
// config order.
func (r *rounds) batch() ([]State, error) {
	var first error
	for _, err := range r.errs {
		if err != nil {
			first = err
			break
		}
	}
	return slices.Clone(r.states), first
}

func (s *Source) close() {
	for _, c := range s.closers {
		_ = c()
	}
	s.closers = nil
}

// newFlock, newPIDFile, newRedis and newMySQL build one lock's probe.
func newFlock(path string) fileProber { return flockProbe{path: path} }

func newPIDFile(path string, staleAfter time.Duration) fileProber {
	return pidfileProbe{path: path, staleAfter: staleAfter, alive: procfs.Alive, started: procfs.StartTime}
}

func newRedisClient(url, password string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		// go-redis' errors quote the URL, which may hold a password.
		return nil, errors.New("redis: not a redis://, rediss:// or unix:// URL")
	}
	if password != "" {
		opts.Password = password
	}
	opts.DialTimeout = maxProbeTime
	opts.ReadTimeout = maxProbeTime
	opts.WriteTimeout = maxProbeTime
	opts.MaxRetries = -1 // a failed probe is counted, not retried
	opts.PoolSize = 1
	// Without this go-redis ignores a context's deadline for reading and
	// writing, and a stopped server held a probe for ReadTimeout.
	opts.ContextTimeoutEnabled = true
	opts.DisableIdentity = true // no CLIENT SETINFO: old servers answer it with errors
	return redis.NewClient(opts), nil
}

func newMySQLDB(cfg *mysql.Config) (*sql.DB, error) {
	c := cfg.Clone()
	c.Timeout, c.ReadTimeout, c.WriteTimeout = maxProbeTime, maxProbeTime, maxProbeTime
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return strings.TrimSpace(h)
}
