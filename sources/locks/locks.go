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
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"jobwatch/internal/procfs"
	"jobwatch/model"
	"jobwatch/sources"
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
	// maxProbeTime bounds one probe of a server, so a server that does not
	// answer delays a round by at most this.
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
func (s *Source) Run(ctx context.Context, _ json.RawMessage, sink sources.Sink) error {
	defer s.close()
	health := sources.NewHealth(s.name, sink, s.log)
	health.DownMsg, health.DownLevel, health.UpMsg = "lock probe failed", slog.LevelWarn, "lock probes succeed again"
	for {
		states, err := s.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		sink.Apply(model.Batch{Source: s.name, Observations: observations(states)})
		if err != nil {
			health.Down("", err)
		} else {
			health.Up()
		}
		if !s.wait(ctx, s.interval) {
			return nil
		}
	}
}

// round probes every lock once; err is the first failure.
func (s *Source) round(ctx context.Context) ([]State, error) {
	states := make([]State, 0, len(s.locks))
	var first error
	for _, l := range s.locks {
		now := s.now()
		var st State
		var err error
		if l.file != nil {
			st, err = l.file.probe(now)
		} else {
			pctx, cancel := context.WithTimeout(ctx, min(maxProbeTime, s.interval))
			st, err = l.net.probe(pctx, now)
			cancel()
		}
		if err != nil {
			l.errors++
			if first == nil {
				first = fmt.Errorf("lock %q of job %q: %w", l.label, l.job, err)
			}
			// What a failed probe saw is not known: report the lock as not
			// seen held rather than carry an old answer on.
			st = State{Kind: st.Kind}
		}
		st.Job, st.Lock, st.ProbeErrors = l.job, l.label, l.errors
		states = append(states, st)
	}
	return states, first
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
