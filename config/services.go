package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/units"
	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/internal/jobruns"
)

// Checkins turns on HTTP check-ins (docs/checkins.md).
type Checkins struct {
	Enabled bool `yaml:"enabled"`
	// MaxBody bounds a check-in's request body; default DefaultMaxBody.
	MaxBody ByteSize `yaml:"max_body"`
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
}

// Where check-ins are stored.
const (
	StoreSpool        = "spool"
	StoreMySQL        = "mysql"
	DefaultCheckTable = "job_runs"
)

// Check-in limits.
const (
	DefaultMaxBody = 100 << 10
	maxMaxBody     = 10 << 20
)

// Discovery makes jobwatch serve look at the host's crontabs and timers
// every Interval (docs/discover.md).
type Discovery struct {
	Enabled bool `yaml:"enabled"`
	// Watch is host mode: every job discovery finds that no configured job
	// watches is watched too, with the sources that see its runs; jobs:
	// may then be empty.
	Watch    bool     `yaml:"watch"`
	Root     string   `yaml:"root"`
	Interval Duration `yaml:"interval"`
	// RetiredRetention is how long host mode keeps the history of a job
	// that has gone from the host (retired) before forgetting it.
	RetiredRetention Duration `yaml:"retired_retention"`
}

// Discovery defaults and bounds.
const (
	DefaultDiscoveryInterval = 5 * time.Minute
	minDiscoveryInterval     = 10 * time.Second
	// DefaultRetiredRetention: a week, to look back at a job removed on
	// purpose, or to take it up again when it comes back.
	DefaultRetiredRetention = 7 * 24 * time.Hour
)

// ByteSize is a size in bytes, written as a number or with a unit (100KiB,
// 1MB: units are powers of 1024, as in Prometheus' configs).
type ByteSize int64

func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: a size must be a number of bytes or like 100KiB", n.Line)
	}
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*b = ByteSize(v)
		return nil
	}
	v, err := units.ParseBase2Bytes(strings.Replace(s, "iB", "B", 1))
	if err != nil {
		return fmt.Errorf("line %d: bad size %q: want a number of bytes or like 100KiB, 10MiB", n.Line, s)
	}
	*b = ByteSize(v)
	return nil
}

func (c *Checkins) validate(jobs map[string]bool, resolve func(string) string) []error {
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
	return errs
}

// validateStore checks store and the keys of store: mysql.
func (c *Checkins) validateStore(resolve func(string) string) []error {
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
func (c *Checkins) checkReader(srcs []Source) []error {
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
func (c *Checkins) Accepted(all []Job) []string {
	if len(c.Jobs) > 0 {
		return c.Jobs
	}
	out := make([]string, 0, len(all))
	for _, j := range all {
		out = append(out, j.Name)
	}
	return out
}

func (d *Discovery) validate(resolve func(string) string) []error {
	var errs []error
	if d.Watch && !d.Enabled {
		errs = append(errs, errors.New("watch: true requires enabled: true"))
	}
	if d.Interval == 0 {
		d.Interval = Duration(DefaultDiscoveryInterval)
	}
	if d.Interval.D() < minDiscoveryInterval {
		errs = append(errs, fmt.Errorf("interval must be at least %s, got %s", minDiscoveryInterval, d.Interval.D()))
	}
	switch {
	case d.RetiredRetention == 0:
		d.RetiredRetention = Duration(DefaultRetiredRetention)
	case d.RetiredRetention < 0:
		errs = append(errs, fmt.Errorf("retired_retention must be positive, like 7d, got %s", d.RetiredRetention))
	}
	if d.Root == "" {
		d.Root = "/"
	}
	d.Root = resolve(d.Root)
	if d.Root == "" {
		errs = append(errs, errors.New("root must not be empty"))
	}
	return errs
}
