// Package config reads and validates jobwatch.yml. Every problem is reported
// at once, each naming the job or source it belongs to.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/hashicorp/go-multierror"
	"go.yaml.in/yaml/v3"
)

// DefaultStaleMultiple is how many periods without success make a job stale.
const DefaultStaleMultiple = 2

// Config is the whole of jobwatch.yml.
type Config struct {
	// StaleMultiple: a job is stale after this many expected runs without success.
	StaleMultiple int      `yaml:"stale_multiple"`
	Jobs          []Job    `yaml:"jobs"`
	Sources       []Source `yaml:"sources"`

	// Dir is the directory of the config file; relative paths are taken from it.
	Dir string `yaml:"-"`
}

// Job is one scheduled job that jobwatch watches.
type Job struct {
	Name       string    `yaml:"name"`
	Every      Duration  `yaml:"every"`
	Schedule   string    `yaml:"schedule"`
	OnCalendar StringSet `yaml:"on_calendar"`
	Timezone   string    `yaml:"timezone"`
	Grace      Duration  `yaml:"grace"`
	Timeout    Duration  `yaml:"timeout"`
	// Scope is "host" (default: every host that reports the job should run
	// it) or "cluster" (one run per slot on any one host).
	Scope string `yaml:"scope"`
	// Cron is the cron daemon that runs a schedule: job: "debian" (the
	// default: Debian's cron, which ignores CRON_TZ) or "cronie".
	Cron string `yaml:"cron"`
}

// Source is one place records are read from. Type selects which of the
// type-specific field groups apply; fields of other types are errors.
type Source struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"`

	RunLog  `yaml:",inline"`
	MySQL   `yaml:",inline"`
	Journal `yaml:",inline"`
}

// Source types.
const (
	TypeRunLog  = "runlog"
	TypeMySQL   = "mysql"
	TypeJournal = "journal"
)

// nameRE is what job_name and source label values may look like.
var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]*$`)

// JobCheck validates what package config cannot see into, such as schedule
// expressions; its errors are reported with config's own, naming the job.
type JobCheck func(Job) []error

// Load reads and validates the config file at path.
func Load(path string, checks ...JobCheck) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	cfg, err := Parse(f, checks...)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Dir = dirOf(path)
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		s.Path = cfg.Path(s.Path)
		s.DSNFile = cfg.Path(s.DSNFile)
		s.Directory = cfg.Path(s.Directory)
		for k := range s.Files {
			s.Files[k] = cfg.Path(s.Files[k])
		}
	}
	return cfg, nil
}

// Parse reads and validates a config.
func Parse(r io.Reader, checks ...JobCheck) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg Config
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if cfg.StaleMultiple == 0 {
		cfg.StaleMultiple = DefaultStaleMultiple
	}
	if err := cfg.validate(checks); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func (c *Config) validate(checks []JobCheck) error {
	var errs *multierror.Error
	if c.StaleMultiple < 1 {
		errs = multierror.Append(errs, fmt.Errorf("stale_multiple must be at least 1, got %d", c.StaleMultiple))
	}
	if len(c.Jobs) == 0 {
		errs = multierror.Append(errs, errors.New("no jobs configured"))
	}
	seen := map[string]bool{}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		where := fmt.Sprintf("jobs[%d]", i)
		if j.Name != "" {
			where = fmt.Sprintf("job %q", j.Name)
		}
		jobErrs := j.validate()
		for _, check := range checks {
			jobErrs = append(jobErrs, check(*j)...)
		}
		for _, err := range jobErrs {
			errs = multierror.Append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if j.Name != "" && seen[j.Name] {
			errs = multierror.Append(errs, fmt.Errorf("%s: duplicate job name", where))
		}
		seen[j.Name] = true
	}
	seen = map[string]bool{}
	for i := range c.Sources {
		s := &c.Sources[i]
		where := fmt.Sprintf("sources[%d]", i)
		if s.Name != "" {
			where = fmt.Sprintf("source %q", s.Name)
		}
		for _, err := range s.validate(c) {
			errs = multierror.Append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if s.Name != "" && seen[s.Name] {
			errs = multierror.Append(errs, fmt.Errorf("%s: duplicate source name", where))
		}
		seen[s.Name] = true
	}
	if errs == nil {
		return nil
	}
	errs.ErrorFormat = listErrors
	return errs
}

func (j *Job) validate() []error {
	var errs []error
	switch {
	case j.Name == "":
		errs = append(errs, errors.New("name is required"))
	case !nameRE.MatchString(j.Name):
		errs = append(errs, fmt.Errorf("name %q must match %s", j.Name, nameRE))
	}
	if err := j.CheckScheduleKinds(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"every", j.Every}, {"grace", j.Grace}, {"timeout", j.Timeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.field))
		}
	}
	switch j.Cron {
	case "", "debian", "cronie":
		if j.Cron != "" && j.Schedule == "" {
			errs = append(errs, errors.New("cron: applies only to schedule, not to every or on_calendar"))
		}
	default:
		errs = append(errs, fmt.Errorf("cron must be debian or cronie, got %q", j.Cron))
	}
	switch j.Scope {
	case "", "host", "cluster":
	default:
		errs = append(errs, fmt.Errorf("scope must be host or cluster, got %q", j.Scope))
	}
	return errs
}

// CheckScheduleKinds reports a job that sets not exactly one of every,
// schedule and on_calendar.
func (j *Job) CheckScheduleKinds() error {
	kinds := 0
	for _, set := range []bool{j.Every > 0, j.Schedule != "", len(j.OnCalendar) > 0} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("exactly one of every, schedule and on_calendar is required, got %d", kinds)
	}
	return nil
}

func (s *Source) validate(c *Config) []error {
	var errs []error
	switch {
	case s.Name == "":
		errs = append(errs, errors.New("name is required"))
	case !nameRE.MatchString(s.Name):
		errs = append(errs, fmt.Errorf("name %q must match %s", s.Name, nameRE))
	}
	type group struct {
		typ   string
		set   []string
		check func(*Config) []error
	}
	groups := []group{
		{TypeRunLog, s.RunLog.setFields(), s.RunLog.validate},
		{TypeMySQL, s.MySQL.setFields(), s.MySQL.validate},
		{TypeJournal, s.Journal.setFields(), s.Journal.validate},
	}
	known := false
	for _, g := range groups {
		if g.typ == s.Type {
			known = true
			errs = append(errs, g.check(c)...)
			continue
		}
		for _, f := range g.set {
			errs = append(errs, fmt.Errorf("%s is not a field of type %q", f, s.Type))
		}
	}
	if !known {
		errs = append(errs, fmt.Errorf("type must be one of runlog, mysql, journal, got %q", s.Type))
	}
	return errs
}

// JobNames lists the configured job names.
func (c *Config) JobNames() map[string]bool {
	m := make(map[string]bool, len(c.Jobs))
	for _, j := range c.Jobs {
		m[j.Name] = true
	}
	return m
}

func listErrors(errs []error) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d problem(s):", len(errs))
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s", e)
	}
	return b.String()
}
