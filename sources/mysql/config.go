package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// MySQL is the config of a type: mysql source (a job_runs table).
type MySQL struct {
	DSN          string             `yaml:"dsn"`
	DSNFile      string             `yaml:"dsn_file"`
	Table        string             `yaml:"table"`
	Columns      *MySQLColumns      `yaml:"columns"`
	StatusValues *MySQLStatusValues `yaml:"status_values"`
	PollInterval Duration           `yaml:"poll_interval"`
	// LateWindow is how long an id missing below the highest id read (a
	// transaction that has not committed yet, or never will) is looked for.
	LateWindow Duration `yaml:"late_window"`
}

// MySQLColumns names the table's columns; empty keys take the defaults.
type MySQLColumns struct {
	ID         string `yaml:"id"`
	Job        string `yaml:"job"`
	StartedAt  string `yaml:"started_at"`
	FinishedAt string `yaml:"finished_at"`
	Status     string `yaml:"status"`
	Host       string `yaml:"host"`
	PID        string `yaml:"pid"`
}

// MySQLStatusValues maps the status column's values to results.
type MySQLStatusValues struct {
	Success []string `yaml:"success"`
	Failure []string `yaml:"failure"`
	Timeout []string `yaml:"timeout"`
	Skipped []string `yaml:"skipped"`
}

// Defaults of a type: mysql source.
const (
	DefaultMySQLTable        = "job_runs"
	DefaultMySQLPollInterval = 5 * time.Second
	DefaultMySQLLateWindow   = 10 * time.Minute
	// MinMySQLPollInterval keeps a misconfigured source from hammering the server.
	MinMySQLPollInterval = 100 * time.Millisecond
)

// DefaultMySQLColumns are the column names of examples/job_runs.sql.
var DefaultMySQLColumns = MySQLColumns{
	ID:         "id",
	Job:        "job_name",
	StartedAt:  "started_at",
	FinishedAt: "finished_at",
	Status:     "status",
	Host:       "host",
	PID:        "pid",
}

// DefaultMySQLStatusValues apply to each result left empty.
var DefaultMySQLStatusValues = MySQLStatusValues{
	Success: []string{"success"},
	Failure: []string{"failure", "failed", "error"},
	Timeout: []string{"timeout"},
	Skipped: []string{"skipped"},
}

// identRE is what a table or column name may look like: MySQL's unquoted
// identifier characters, so that a name can never close the backquotes it is
// written in. A table may be qualified by its database (app.job_runs).
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`)

// TableName is the table, defaulted.
func (m *MySQL) TableName() string {
	if m.Table == "" {
		return DefaultMySQLTable
	}
	return m.Table
}

// ColumnNames are the column names, each defaulted.
func (m *MySQL) ColumnNames() MySQLColumns {
	c := DefaultMySQLColumns
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
func (m *MySQL) Statuses() MySQLStatusValues {
	s := DefaultMySQLStatusValues
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
func (m *MySQL) Poll() time.Duration {
	if m.PollInterval == 0 {
		return DefaultMySQLPollInterval
	}
	return m.PollInterval.D()
}

// Late is the late window, defaulted.
func (m *MySQL) Late() time.Duration {
	if m.LateWindow == 0 {
		return DefaultMySQLLateWindow
	}
	return m.LateWindow.D()
}

// NamedColumns lists the columns by config key, in a fixed order.
func (c MySQLColumns) NamedColumns() [][2]string {
	return [][2]string{
		{"id", c.ID}, {"job", c.Job}, {"started_at", c.StartedAt}, {"finished_at", c.FinishedAt},
		{"status", c.Status}, {"host", c.Host}, {"pid", c.PID},
	}
}

func (m *MySQL) setFields() []string {
	var f []string
	if m.DSN != "" {
		f = append(f, "dsn")
	}
	if m.DSNFile != "" {
		f = append(f, "dsn_file")
	}
	if m.Table != "" {
		f = append(f, "table")
	}
	if m.Columns != nil {
		f = append(f, "columns")
	}
	if m.StatusValues != nil {
		f = append(f, "status_values")
	}
	if m.PollInterval != 0 {
		f = append(f, "poll_interval")
	}
	if m.LateWindow != 0 {
		f = append(f, "late_window")
	}
	return f
}

func (m *MySQL) validate(*Config) []error {
	return m.Validate()
}

// Validate checks a mysql source's fields. It is exported so that the source
// can refuse a config built without config.Parse.
func (m *MySQL) Validate() []error {
	var errs []error
	if (m.DSN == "") == (m.DSNFile == "") {
		errs = append(errs, errors.New("exactly one of dsn and dsn_file is required"))
	}
	if m.PollInterval < 0 {
		errs = append(errs, errors.New("poll_interval must not be negative"))
	} else if m.PollInterval != 0 && m.PollInterval.D() < MinMySQLPollInterval {
		errs = append(errs, fmt.Errorf("poll_interval must be at least %s", MinMySQLPollInterval))
	}
	if m.LateWindow < 0 {
		errs = append(errs, errors.New("late_window must not be negative"))
	}
	if err := checkTableName(m.TableName()); err != nil {
		errs = append(errs, err)
	}
	cols := m.ColumnNames()
	seen := map[string]string{}
	for _, kv := range cols.NamedColumns() {
		key, name := kv[0], kv[1]
		if !identRE.MatchString(name) {
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
		if !identRE.MatchString(p) {
			return fmt.Errorf("table %q is not a plain table name (letters, digits, _ and $, at most 64, not starting with a digit; optionally database.table)", t)
		}
	}
	return nil
}
