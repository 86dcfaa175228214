package mysql

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
)

// Type is the type of source this package reads.
const Type = "mysql"

func init() { sources.Register(Type, decode) }

func decode(b config.Block) (sources.Config, []error) {
	var c Config
	errs := config.DecodeBlock(b, &c)
	errs = append(errs, c.Validate()...)
	c.DSNFile = b.Resolve(c.DSNFile)
	return &c, errs
}

var _ sources.Config = (*Config)(nil)

// Identity is the database and table read: a DSN may hold a password, so
// only a hash of it is kept. The table is as configured (empty: the
// default), as saved positions have it.
func (m *Config) Identity() string {
	h := sha256.Sum256([]byte(m.DSN + "\x00" + m.DSNFile))
	return "mysql:" + hex.EncodeToString(h[:8]) + ":" + m.Table
}

// New builds the source; it reads the DSN but does not connect.
func (m *Config) New(name string, deps sources.Deps) (sources.Source, error) {
	return New(name, *m, deps)
}

// Config is the block of a type: mysql source (a job_runs table).
type Config struct {
	DSN          string          `yaml:"dsn"`
	DSNFile      string          `yaml:"dsn_file"`
	Table        string          `yaml:"table"`
	Columns      *Columns        `yaml:"columns"`
	StatusValues *StatusValues   `yaml:"status_values"`
	PollInterval config.Duration `yaml:"poll_interval"`
	// Lateness is the late_window key as written (0: the default); see
	// Late.
	Lateness config.Duration `yaml:"late_window"`
}

// Columns names the table's columns; empty keys take the defaults.
type Columns struct {
	ID         string `yaml:"id"`
	Job        string `yaml:"job"`
	StartedAt  string `yaml:"started_at"`
	FinishedAt string `yaml:"finished_at"`
	Status     string `yaml:"status"`
	Host       string `yaml:"host"`
	PID        string `yaml:"pid"`
}

// StatusValues maps the status column's values to results.
type StatusValues struct {
	Success []string `yaml:"success"`
	Failure []string `yaml:"failure"`
	Timeout []string `yaml:"timeout"`
	Skipped []string `yaml:"skipped"`
}

// Defaults of a type: mysql source.
const (
	DefaultTable        = "job_runs"
	DefaultPollInterval = 5 * time.Second
	// DefaultLateWindow is the late window when the database's open
	// transactions cannot be read (watermark.go, docs/mysql.md).
	DefaultLateWindow = 15 * time.Second
	// MinPollInterval keeps a misconfigured source from hammering the server.
	MinPollInterval = 100 * time.Millisecond
)

// DefaultColumns are the column names of examples/job_runs.sql.
var DefaultColumns = Columns{
	ID:         "id",
	Job:        "job_name",
	StartedAt:  "started_at",
	FinishedAt: "finished_at",
	Status:     "status",
	Host:       "host",
	PID:        "pid",
}

// DefaultStatusValues apply to each result left empty.
var DefaultStatusValues = StatusValues{
	Success: []string{"success"},
	Failure: []string{"failure", "failed", "error"},
	Timeout: []string{"timeout"},
	Skipped: []string{"skipped"},
}

// identRE is what a table or column name may look like: MySQL's unquoted
// identifier characters, so that a name can never close the backquotes it is
// written in. A table may be qualified by its database (app.job_runs).
var identRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`) })

// TableName is the table, defaulted.
func (m *Config) TableName() string {
	if m.Table == "" {
		return DefaultTable
	}
	return m.Table
}

// ColumnNames are the column names, each defaulted.
func (m *Config) ColumnNames() Columns {
	c := DefaultColumns
	if m.Columns == nil {
		return c
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&c.ID, m.Columns.ID}, {&c.Job, m.Columns.Job}, {&c.StartedAt, m.Columns.StartedAt},
		{&c.FinishedAt, m.Columns.FinishedAt}, {&c.Status, m.Columns.Status},
		{&c.Host, m.Columns.Host}, {&c.PID, m.Columns.PID},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return c
}

// Statuses are the status values of each result, each defaulted.
func (m *Config) Statuses() StatusValues {
	s := DefaultStatusValues
	if m.StatusValues == nil {
		return s
	}
	if len(m.StatusValues.Success) > 0 {
		s.Success = m.StatusValues.Success
	}
	if len(m.StatusValues.Failure) > 0 {
		s.Failure = m.StatusValues.Failure
	}
	if len(m.StatusValues.Timeout) > 0 {
		s.Timeout = m.StatusValues.Timeout
	}
	if len(m.StatusValues.Skipped) > 0 {
		s.Skipped = m.StatusValues.Skipped
	}
	return s
}

// Poll is the poll interval, defaulted.
func (m *Config) Poll() time.Duration {
	if m.PollInterval == 0 {
		return DefaultPollInterval
	}
	return m.PollInterval.D()
}

// Late is the late window, defaulted: how long at least an id missing
// below the highest id read (a transaction that has not committed yet, or
// never will) is looked for, and so how late, in event time, a row may be
// handed over when the database's open transactions are not read. Unset,
// the watermark comes from the database (watermark.go) and the window is
// the fallback; set, it is fixed and the database is not asked.
func (m *Config) Late() time.Duration {
	return sources.LateWindowOf(m.Lateness, DefaultLateWindow)
}

var _ sources.RunReporter = (*Config)(nil)

// LateWindow is how late, in event time, a row may be handed over: Late.
func (m *Config) LateWindow() time.Duration { return m.Late() }

var _ sources.Waiter = (*Config)(nil)

// Wait is how far behind the clock the source's watermark usually is: a
// poll interval and, with the database's watermark, its margin (more
// while a transaction is open), else the late window.
func (m *Config) Wait() time.Duration {
	if m.Lateness == 0 {
		return m.Poll() + WatermarkMargin
	}
	return m.Poll() + m.Late()
}

// NamedColumns lists the columns by config key, in a fixed order.
func (c Columns) NamedColumns() [][2]string {
	return [][2]string{
		{"id", c.ID}, {"job", c.Job}, {"started_at", c.StartedAt}, {"finished_at", c.FinishedAt},
		{"status", c.Status}, {"host", c.Host}, {"pid", c.PID},
	}
}

// Validate checks a mysql source's fields. It is exported so that the source
// can refuse a config built without the config file.
func (m *Config) Validate() []error {
	var errs []error
	if (m.DSN == "") == (m.DSNFile == "") {
		errs = append(errs, errors.New("exactly one of dsn and dsn_file is required"))
	}
	if m.PollInterval < 0 {
		errs = append(errs, errors.New("poll_interval must not be negative"))
	} else if m.PollInterval != 0 && m.PollInterval.D() < MinPollInterval {
		errs = append(errs, fmt.Errorf("poll_interval must be at least %s", MinPollInterval))
	}
	if err := sources.CheckLateWindow(m.Lateness); err != nil {
		errs = append(errs, err)
	}
	if err := checkTableName(m.TableName()); err != nil {
		errs = append(errs, err)
	}
	cols := m.ColumnNames()
	seen := map[string]string{}
	for _, kv := range cols.NamedColumns() {
		key, name := kv[0], kv[1]
		if !identRE().MatchString(name) {
			errs = append(errs, fmt.Errorf("columns.%s: %q is not a plain column name (letters, digits, _ and $, at most 64, not starting with a digit)", key, name))
			continue
		}
		if other, ok := seen[strings.ToLower(name)]; ok {
			errs = append(errs, fmt.Errorf("columns.%s: column %q is already columns.%s", key, name, other))
		}
		seen[strings.ToLower(name)] = key
	}
	st := m.Statuses()
	values := map[string]string{}
	for _, g := range []struct {
		key    string
		values []string
	}{{"success", st.Success}, {"failure", st.Failure}, {"timeout", st.Timeout}, {"skipped", st.Skipped}} {
		for _, v := range g.values {
			if strings.TrimSpace(v) == "" {
				errs = append(errs, fmt.Errorf("status_values.%s: empty value", g.key))
				continue
			}
			k := strings.ToLower(v)
			if other, ok := values[k]; ok && other != g.key {
				errs = append(errs, fmt.Errorf("status_values.%s: %q is also a %s value", g.key, v, other))
			}
			values[k] = g.key
		}
	}
	return errs
}

func checkTableName(t string) error {
	parts := strings.Split(t, ".")
	if len(parts) > 2 {
		return fmt.Errorf("table %q: at most one dot (database.table)", t)
	}
	for _, p := range parts {
		if !identRE().MatchString(p) {
			return fmt.Errorf("table %q is not a plain table name (letters, digits, _ and $, at most 64, not starting with a digit; optionally database.table)", t)
		}
	}
	return nil
}
