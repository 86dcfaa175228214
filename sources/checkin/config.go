package checkin

import (
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/jobruns"
)

// Block is the key of the config file's check-in block.
const Block = "checkins"

func init() { config.RegisterServiceBlock(Block, decodeBlock) }

// Config is the checkins: block, which turns on HTTP check-ins
// (docs/checkins.md).
type Config struct {
	Enabled bool `yaml:"enabled"`
	// MaxBody bounds a check-in's request body; default DefaultMaxBody.
	MaxBody config.ByteSize `yaml:"max_body"`
	// Jobs, when set, are the only jobs whose check-ins are accepted;
	// default: every configured job.
	Jobs []string `yaml:"jobs"`
	// Store is where an acknowledged check-in is kept: StoreSpool (the
	// default, the state directory's spool) or StoreMySQL (a row of a
	// shared job_runs table, for replicas; docs/checkins.md).
	Store string `yaml:"store"`
	// MySQLDSN or MySQLDSNFile is the DSN of store: mysql.
	MySQLDSN     string `yaml:"mysql_dsn"`
	MySQLDSNFile string `yaml:"mysql_dsn_file"`
	// Table is store: mysql's table; default "job_runs".
	Table string `yaml:"table"`
	// Keys are the keys other monitors' URLs carry (dialects.go): a
	// check-in in their shape is accepted only with one of them.
	Keys Keys `yaml:"keys"`
	// RootPaths serves Healthchecks' paths at the root too (/<uuid>,
	// /<ping-key>/<slug>), for a host name moved from hc-ping.com.
	RootPaths bool `yaml:"root_paths"`
	// Create lets ?create=1 under a Healthchecks ping key create jobs
	// (create.go).
	Create Create `yaml:"create"`
}

// Keys are the keys of the other monitors' URLs, each a string or a list.
type Keys struct {
	// Healthchecks are project ping keys, of /ping/<ping-key>/<slug>.
	Healthchecks config.StringSet `yaml:"healthchecks"`
	// Sentry are DSN public keys, of /api/<project>/cron/<slug>/<key>/
	// and of envelopes' X-Sentry-Auth.
	Sentry config.StringSet `yaml:"sentry"`
	// Cronitor are telemetry keys, of /p/<key>/<monitor-key>.
	Cronitor config.StringSet `yaml:"cronitor"`
}

// KeyPattern is what a key may look like: the characters of each monitor's
// keys (URL-safe base64, hex, alphanumerics), long enough to be a secret.
const KeyPattern = `^[A-Za-z0-9_-]{8,128}$`

var keyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(KeyPattern) })

// Where check-ins are stored.
const (
	StoreSpool        = "spool"
	StoreMySQL        = "mysql"
	DefaultCheckTable = "job_runs"
)

// maxMaxBody bounds max_body.
const maxMaxBody = 10 << 20

// ConfigOf is the check-in block of cfg, decoded and validated; its
// defaults (off) when cfg has none.
func ConfigOf(cfg *config.Config) Config {
	if c, ok := cfg.Service(Block).(*Config); ok && c != nil {
		return *c
	}
	return Config{MaxBody: DefaultMaxBody, Store: StoreSpool, Table: DefaultCheckTable}
}

// decodeBlock decodes and validates the checkins: block, and checks what it
// needs of the rest of the config (a mysql source to read store: mysql's
// table back).
func decodeBlock(b config.ServiceBlock) (any, []error) {
	c := &Config{}
	var errs []error
	if b.Node != nil {
		errs = config.Decode(b.Node, c, "")
	}
	if len(errs) == 0 {
		errs = c.validate(b.Config.JobNames(), identifiers(b.Config.Jobs), b.Config.Path)
	}
	if len(errs) == 0 {
		errs = c.checkReader(b.Config.Sources)
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	return c, errs
}

func (c *Config) validate(jobs, ids map[string]bool, resolve func(string) string) []error {
	errs := c.validateStore(resolve)
	if c.MaxBody < 0 || c.MaxBody > maxMaxBody {
		errs = append(errs, fmt.Errorf("max_body must be between 0 and %d bytes (10MiB), got %d", maxMaxBody, c.MaxBody))
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	for _, j := range c.Jobs {
		if !jobs[j] {
			errs = append(errs, fmt.Errorf("jobs: %q is not a configured job", j))
		}
	}
	errs = append(errs, c.Create.validate()...)
	return append(errs, c.Keys.validate(ids)...)
}

// validate checks every key; ids are the configured jobs' names and
// aliases, which a Healthchecks key must not be (/ping/<key>/... would be
// both). A key is a secret: a message names its place, never its value.
func (k *Keys) validate(ids map[string]bool) []error {
	var errs []error
	for _, set := range []struct {
		name string
		keys config.StringSet
	}{{"healthchecks", k.Healthchecks}, {"sentry", k.Sentry}, {"cronitor", k.Cronitor}} {
		for i, key := range set.keys {
			switch {
			case !keyRE().MatchString(key):
				errs = append(errs, fmt.Errorf("keys.%s[%d] must match %s", set.name, i, KeyPattern))
			case set.name == "healthchecks" && ids[key]:
				errs = append(errs, fmt.Errorf("keys.%s[%d] is also a job's name or alias", set.name, i))
			}
		}
	}
	return errs
}

// validateStore checks store and the keys of store: mysql.
func (c *Config) validateStore(resolve func(string) string) []error {
	if c.Store == "" {
		c.Store = StoreSpool
	}
	if c.Table == "" {
		c.Table = DefaultCheckTable
	}
	switch c.Store {
	case StoreSpool:
		if c.MySQLDSN != "" || c.MySQLDSNFile != "" {
			return []error{errors.New("mysql_dsn and mysql_dsn_file are for store: mysql")}
		}
		return nil
	case StoreMySQL:
	default:
		return []error{fmt.Errorf("store must be %s or %s, got %q", StoreSpool, StoreMySQL, c.Store)}
	}
	var errs []error
	if (c.MySQLDSN == "") == (c.MySQLDSNFile == "") {
		errs = append(errs, errors.New("store: mysql needs exactly one of mysql_dsn and mysql_dsn_file"))
	}
	if c.MySQLDSNFile != "" {
		c.MySQLDSNFile = resolve(c.MySQLDSNFile)
	}
	if _, err := jobruns.ParseTable(c.Table); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkReader checks that store: mysql's table is read back: the check-ins
// it stores are applied only by a source of type mysql (none is applied
// locally), which the config must have.
func (c *Config) checkReader(srcs []config.Source) []error {
	if !c.Enabled || c.Store != StoreMySQL {
		return nil
	}
	for _, s := range srcs {
		if s.Type == StoreMySQL {
			return nil
		}
	}
	return []error{fmt.Errorf("store: mysql needs a source of type: mysql reading table %s (docs/checkins.md#high-availability): check-ins stored in the table are applied only through it", c.Table)}
}

// Accepted are the jobs whose check-ins are accepted.
func (c *Config) Accepted(all []config.Job) []string {
	if len(c.Jobs) > 0 {
		return c.Jobs
	}
	out := make([]string, 0, len(all))
	for _, j := range all {
		out = append(out, j.Name)
	}
	return out
}

// identifiers are the names and aliases of jobs.
func identifiers(jobs []config.Job) map[string]bool {
	ids := map[string]bool{}
	for _, j := range jobs {
		ids[j.Name] = true
		for _, a := range j.Aliases {
			ids[a] = true
		}
	}
	return ids
}
