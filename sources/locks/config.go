package locks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/procfs"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/sources"
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
		errs = append(errs, c.Locks[i].validate(i, jobs, seen)...)
	}
	return errs
}

// validate checks locks[i]; seen holds the jobs and labels of the locks
// before it, and is given this one's.
func (l *LockConfig) validate(i int, jobs map[string]bool, seen map[[2]string]bool) []error {
	where := fmt.Sprintf("locks[%d]", i)
	if l.Job != "" {
		where = fmt.Sprintf("locks[%d] (job %q)", i, l.Job)
	}
	var problems []string
	switch {
	case l.Job == "":
		problems = append(problems, "job is required")
	case !jobs[l.Job]:
		problems = append(problems, fmt.Sprintf("job %q is not configured", l.Job))
	}
	if l.kinds() != 1 || (l.MySQL != "" && l.MySQLDSNFile != "") {
		problems = append(problems, "exactly one of flock, pidfile, redis, mysql and mysql_dsn_file is required")
	} else {
		problems = append(problems, l.kindProblems()...)
		if label := l.label(); label != "" {
			k := [2]string{l.Job, label}
			if seen[k] {
				problems = append(problems, fmt.Sprintf("lock %q of job %q is configured twice", label, l.Job))
			}
			seen[k] = true
		}
	}
	errs := make([]error, len(problems))
	for j, p := range problems {
		errs[j] = errors.New(where + ": " + p)
	}
	return errs
}

// kinds is how many kinds of lock l names.
func (l *LockConfig) kinds() int {
	n := 0
	for _, set := range []bool{l.Flock != "", l.PIDFile != "", l.Redis != "", l.MySQL != "" || l.MySQLDSNFile != ""} {
		if set {
			n++
		}
	}
	return n
}

// kindProblems are what is wrong with l's fields for its kind: fields of
// other kinds, and its kind's fields missing or out of range.
func (l *LockConfig) kindProblems() []string {
	var problems []string
	kind := l.kind()
	only := func(field string, set bool, kinds ...string) {
		if set && !strings.Contains(strings.Join(kinds, ","), kind) {
			problems = append(problems, fmt.Sprintf("%s is not a field of a %s lock", field, kind))
		}
	}
	only("stale_after", l.StaleAfter != 0, kindPIDFile)
	only("redis_password_file", l.RedisPasswordFile != "", kindRedis)
	only("key", l.Key != "", kindRedis)
	only("name", l.Name != "", kindMySQL)
	if l.StaleAfter < 0 {
		problems = append(problems, "stale_after must not be negative")
	}
	switch kind {
	case kindRedis:
		if l.Key == "" {
			problems = append(problems, "key is required with redis")
		}
	case kindMySQL:
		switch {
		case l.Name == "":
			problems = append(problems, "name (the GET_LOCK name) is required with mysql")
		case len(l.Name) > maxLockName:
			problems = append(problems, fmt.Sprintf("name %q is longer than GET_LOCK's %d characters", l.Name, maxLockName))
		}
	}
	return problems
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
		lk, err := s.newLock(l, host, clients)
		if err != nil {
			errs = append(errs, fmt.Errorf("lock %q: %w", l.label(), err))
			continue
		}
		s.locks = append(s.locks, lk)
	}
	if err := errors.Join(errs...); err != nil {
		s.close()
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	return s, nil
}

// newLock builds l's probe. clients holds the server connections made for
// the locks before it, to share.
func (s *Source) newLock(l *LockConfig, host string, clients map[string]*clientOf) (*lock, error) {
	lk := &lock{job: l.Job, label: l.label(), kind: l.kind()}
	switch l.kind() {
	case kindFlock:
		lk.file = newFlock(l.Flock)
	case kindPIDFile:
		lk.file = newPIDFile(l.PIDFile, l.StaleAfter.D())
	case kindRedis:
		c, err := s.redisClient(l, clients)
		if err != nil {
			return nil, err
		}
		lk.net = &redisProbe{client: c.redis, key: l.Key, host: host, alive: procfs.Alive}
	case kindMySQL:
		c, err := s.mysqlClient(l, clients)
		if err != nil {
			return nil, err
		}
		lk.net = &redactedProbe{p: &mysqlProbe{db: c.mysql, name: l.Name}, red: c.red}
	}
	return lk, nil
}

// redisClient is the client of l's server and password, made by the first
// lock that names them.
func (s *Source) redisClient(l *LockConfig, clients map[string]*clientOf) (*clientOf, error) {
	password := ""
	if l.RedisPasswordFile != "" {
		pw, err := secret.ReadFile(l.RedisPasswordFile, s.log)
		if err != nil {
			return nil, fmt.Errorf("redis_password_file: %w", err)
		}
		password = pw
	}
	id := "redis\x00" + l.Redis + "\x00" + password
	if clients[id] == nil {
		client, err := newRedisClient(l.Redis, password)
		if err != nil {
			return nil, err
		}
		clients[id] = &clientOf{redis: client}
		s.closers = append(s.closers, client.Close)
	}
	return clients[id], nil
}

// mysqlClient is the connection pool of l's DSN, made by the first lock
// that names it.
func (s *Source) mysqlClient(l *LockConfig, clients map[string]*clientOf) (*clientOf, error) {
	id := "mysql\x00" + l.MySQL + "\x00" + l.MySQLDSNFile
	if clients[id] == nil {
		cfg, red, err := secret.LoadMySQL(secret.MySQL{DSN: l.MySQL, File: l.MySQLDSNFile, DSNName: "mysql", FileName: "mysql_dsn_file"}, s.log)
		if err != nil {
			return nil, err
		}
		db, err := newMySQLDB(cfg)
		if err != nil {
			return nil, red.Err(err)
		}
		clients[id] = &clientOf{mysql: db, red: red}
		s.closers = append(s.closers, db.Close)
	}
	return clients[id], nil
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

func (r *redactedProbe) probe(ctx context.Context, now time.Time) (State, error) {
	st, err := r.p.probe(ctx, now)
	return st, r.red.Err(err)
}
