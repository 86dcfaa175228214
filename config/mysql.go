package config

import "errors"

// MySQL is the config of a type: mysql source (a job_runs table).
type MySQL struct {
	DSN          string             `yaml:"dsn"`
	DSNFile      string             `yaml:"dsn_file"`
	Table        string             `yaml:"table"`
	Columns      *MySQLColumns      `yaml:"columns"`
	StatusValues *MySQLStatusValues `yaml:"status_values"`
	PollInterval Duration           `yaml:"poll_interval"`
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
	return f
}

func (m *MySQL) validate(*Config) []error {
	var errs []error
	if (m.DSN == "") == (m.DSNFile == "") {
		errs = append(errs, errors.New("exactly one of dsn and dsn_file is required"))
	}
	if m.PollInterval < 0 {
		errs = append(errs, errors.New("poll_interval must not be negative"))
	}
	return errs
}
