package locks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"jobwatch/config"
	"jobwatch/internal/procfs"
	"jobwatch/internal/secret"
	"jobwatch/model"
	"jobwatch/sources"
)

func init() { sources.Register(Type, decode) }

func decode(b config.Block) (sources.Config, []error) {
	var c Config
	errs := config.DecodeBlock(b, &c)
	errs = append(errs, c.Validate(b.Jobs)...)
	for _, p := range c.Paths() {
		*p = b.Resolve(*p)
	}
	return &c, errs
}

var _ sources.Config = (*Config)(nil)

// Identity is empty: a locks source saves no position, so none follows it.
func (c *Config) Identity() string { return "" }

// New builds the source.
func (c *Config) New(name string, deps sources.Deps) (sources.Source, error) {
	return New(name, *c, deps)
}

// Config is a locks source's block of jobwatch.yml.
type Config struct {
	// Interval is how often every lock is probed; default DefaultInterval.
	Interval config.Duration `yaml:"interval"`
	Locks    []LockConfig    `yaml:"locks"`
}

// LockConfig is one job's lock: exactly one of Flock, PIDFile, Redis and
// MySQL (or MySQLDSNFile) says which kind.
type LockConfig struct {
	Job string `yaml:"job"`

	Flock string `yaml:"flock"`

	PIDFile    string          `yaml:"pidfile"`
	StaleAfter config.Duration `yaml:"stale_after"`

	Redis             string `yaml:"redis"`
	RedisPasswordFile string `yaml:"redis_password_file"`
	Key               string `yaml:"key"`

	MySQL        string `yaml:"mysql"`
	MySQLDSNFile string `yaml:"mysql_dsn_file"`
	Name         string `yaml:"name"`
}

// maxLockName is the longest name GET_LOCK accepts.
const maxLockName = 64

func (l *LockConfig) kind() string {
	switch {
	case l.Flock != "":
		return kindFlock
	case l.PIDFile != "":
		return kindPIDFile
	case l.Redis != "":
		return kindRedis
	case l.MySQL != "" || l.MySQLDSNFile != "":
		return kindMySQL
	}
	return ""
}

// label is the value of the lock label: the path, key or lock name.
func (l *LockConfig) label() string {
	switch l.kind() {
	case kindFlock:
		return l.Flock
	case kindPIDFile:
		return l.PIDFile
	case kindRedis:
		return l.Key
	case kindMySQL:
		return l.Name
	}
	return ""
}

// Validate checks the block; jobs are the configured job names. Every
// problem is returned, each naming the lock.
func (c *Config) Validate(jobs map[string]bool) []error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, errors.New("interval must not be negative"))
	}
	if len(c.Locks) == 0 {
		errs = append(errs, errors.New("locks: at least one lock is required"))
	}
	seen := map[[2]string]bool{}
	for i := range c.Locks {
		l := &c.Locks[i]
		where := fmt.Sprintf("locks[%d]", i)
		if l.Job != "" {
			where = fmt.Sprintf("locks[%d] (job %q)", i, l.Job)
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf(where+": "+format, args...))
		}
		switch {
		case l.Job == "":
			bad("job is required")
		case !jobs[l.Job]:
			bad("job %q is not configured", l.Job)
		}
		n := 0
		for _, set := range []bool{l.Flock != "", l.PIDFile != "", l.Redis != "", l.MySQL != "" || l.MySQLDSNFile != ""} {
			if set {
				n++
			}
		}
		if n != 1 || (l.MySQL != "" && l.MySQLDSNFile != "") {
			bad("exactly one of flock, pidfile, redis, mysql and mysql_dsn_file is required")
			continue
		}
		kind := l.kind()
		only := func(field string, set bool, kinds ...string) {
			if set && !strings.Contains(strings.Join(kinds, ","), kind) {
				bad("%s is not a field of a %s lock", field, kind)
			}
		}
		only("stale_after", l.StaleAfter != 0, kindPIDFile)
		only("redis_password_file", l.RedisPasswordFile != "", kindRedis)
		only("key", l.Key != "", kindRedis)
		only("name", l.Name != "", kindMySQL)
		if l.StaleAfter < 0 {
			bad("stale_after must not be negative")
		}
		switch kind {
		case kindRedis:
			if l.Key == "" {
				bad("key is required with redis")
			}
		case kindMySQL:
			switch {
			case l.Name == "":
				bad("name (the GET_LOCK name) is required with mysql")
			case len(l.Name) > maxLockName:
				bad("name %q is longer than GET_LOCK's %d characters", l.Name, maxLockName)
			}
		}
		if label := l.label(); label != "" {
			k := [2]string{l.Job, label}
			if seen[k] {
				bad("lock %q of job %q is configured twice", label, l.Job)
			}
			seen[k] = true
		}
	}
	return errs
}

// Paths are the config's file names, for resolving against the config
// file's directory.
func (c *Config) Paths() []*string {
	var out []*string
	for i := range c.Locks {
		l := &c.Locks[i]
		out = append(out, &l.Flock, &l.PIDFile, &l.RedisPasswordFile, &l.MySQLDSNFile)
	}
	return out
}

// New builds a locks source. Servers are not contacted until Run.
func New(name string, c Config, deps sources.Deps) (*Source, error) {
	deps = deps.WithDefaults()
	log := deps.Logger.With("source", name, "type", Type)
	s := &Source{name: name, log: log, now: deps.Now, interval: c.Interval.D(), wait: sources.Sleep}
	if s.interval == 0 {
		s.interval = DefaultInterval
	}
	host := hostname()
	clients := map[string]*clientOf{}
	var errs []error
	for i := range c.Locks {
		l := &c.Locks[i]
		lk := &lock{job: l.Job, label: l.label()}
		switch l.kind() {
		case kindFlock:
			lk.file = newFlock(l.Flock)
		case kindPIDFile:
			lk.file = newPIDFile(l.PIDFile, l.StaleAfter.D())
		case kindRedis:
			password := ""
			if l.RedisPasswordFile != "" {
				pw, err := secret.ReadFile(l.RedisPasswordFile, log)
				if err != nil {
					errs = append(errs, fmt.Errorf("lock %q: redis_password_file: %w", lk.label, err))
					continue
				}
				password = pw
			}
			id := "redis\x00" + l.Redis + "\x00" + password
			if clients[id] == nil {
				client, err := newRedisClient(l.Redis, password)
				if err != nil {
					errs = append(errs, fmt.Errorf("lock %q: %w", lk.label, err))
					continue
				}
				clients[id] = &clientOf{redis: client}
				s.closers = append(s.closers, client.Close)
			}
			lk.net = &redisProbe{client: clients[id].redis, key: l.Key, host: host, alive: procfs.Alive}
		case kindMySQL:
			id := "mysql\x00" + l.MySQL + "\x00" + l.MySQLDSNFile
			if clients[id] == nil {
				cfg, red, err := secret.LoadMySQL(secret.MySQL{DSN: l.MySQL, File: l.MySQLDSNFile, DSNName: "mysql", FileName: "mysql_dsn_file"}, log)
				if err != nil {
					errs = append(errs, fmt.Errorf("lock %q: %w", lk.label, err))
					continue
				}
				db, err := newMySQLDB(cfg)
				if err != nil {
					errs = append(errs, fmt.Errorf("lock %q: %w", lk.label, red.Err(err)))
					continue
				}
				clients[id] = &clientOf{mysql: db, red: red}
				s.closers = append(s.closers, db.Close)
			}
			lk.net = &redactedProbe{p: &mysqlProbe{db: clients[id].mysql, name: l.Name}, red: clients[id].red}
		}
		s.locks = append(s.locks, lk)
	}
	if err := errors.Join(errs...); err != nil {
		s.close()
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	return s, nil
}

// clientOf is a server connection shared by the locks that name it.
type clientOf struct {
	redis *redis.Client
	mysql *sql.DB
	red   *secret.Redactor
}

// redactedProbe keeps a DSN's secrets out of a probe's errors.
type redactedProbe struct {
	p   netProber
	red *secret.Redactor
}

func (r *redactedProbe) probe(ctx context.Context, now time.Time) (model.LockState, error) {
	st, err := r.p.probe(ctx, now)
	return st, r.red.Err(err)
}
