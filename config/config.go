// Package config reads and validates jobwatch.yml: the file-level settings,
// the jobs, and the list of sources with their names and types. Each job's
// schedule is read with package schedule, as serve reads it; each source's
// own block is decoded and validated by the package of its type,
// registered with package sources. Every problem is reported at once, each
// naming the job or source it belongs to and, when it has one, its line.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/internal/jobname"
	"github.com/jobwatch/jobwatch/schedule"
)

// DefaultStaleMultiple is how many periods without success make a job stale.
const DefaultStaleMultiple = 2

// Config is the whole of jobwatch.yml.
type Config struct {
	// StaleMultiple: a job is stale after this many expected runs without success.
	StaleMultiple int
	// Labels and AlertAfter are the file's defaults, already merged into
	// each job's own (docs/ownership.md).
	Labels     Labels
	AlertAfter AlertAfter
	Jobs       []Job
	Sources    []Source
	// Discovery is an optional service of jobwatch serve (zero value:
	// off); the other services' blocks (checkins:) are their packages'
	// (Service).
	Discovery Discovery
	// Maintenance are windows of every job, besides each job's own.
	Maintenance []Window

	// Dir is the directory of the config file; relative paths are taken from it.
	Dir string

	// services are the decoded blocks of the registered services, by key.
	services map[string]any
}

// file is the top level of jobwatch.yml; the jobs and sources are decoded
// one by one, so that each problem names its job or source.
type file struct {
	StaleMultiple int         `yaml:"stale_multiple"`
	Labels        Labels      `yaml:"labels"`
	AlertAfter    AlertAfter  `yaml:"alert_after"`
	Jobs          []yaml.Node `yaml:"jobs"`
	Sources       []yaml.Node `yaml:"sources"`
	Discovery     yaml.Node   `yaml:"discovery"`
	Maintenance   []Window    `yaml:"maintenance"`
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
	// MinDuration: a run that succeeds in less did nothing, and counts as
	// result too_short, not as a success.
	MinDuration Duration `yaml:"min_duration"`
	// AbandonAfter: a run jobwatch cannot check (another host's, or
	// without a PID), of a job without timeout, is closed as lost this
	// long after its start when nothing else says it is over (0: 24 h).
	AbandonAfter Duration `yaml:"abandon_after"`
	// Persistent: the job is a systemd timer with Persistent=true, whose
	// catch-up after downtime runs the last missed elapse late (only with
	// on_calendar).
	Persistent bool `yaml:"persistent"`
	// Scope is "host" (default: every host that reports the job should run
	// it) or "cluster" (one run per slot on any one host).
	Scope string `yaml:"scope"`
	// Cron is the cron daemon that runs a schedule: job: "debian" (the
	// default: Debian's cron, which ignores CRON_TZ) or "cronie".
	Cron string `yaml:"cron"`
	// Labels and AlertAfter: the job's owner labels and alert thresholds,
	// the file's defaults merged in (ownership.go).
	Labels     Labels     `yaml:"labels"`
	AlertAfter AlertAfter `yaml:"alert_after"`
	// Aliases are the other identifiers the job's check-ins arrive under
	// (another monitor's check UUIDs, slugs, monitor keys); aliases.go.
	Aliases []string `yaml:"aliases"`
	// Maintenance are the job's maintenance windows (config/maintenance.go).
	Maintenance []Window `yaml:"maintenance"`
}

// Source is one place records are read from: its name, its type, and its
// block as the type's package decoded it.
type Source struct {
	Name string
	Type string
	Line int // of the entry in the config file
	// Node is the entry as written, handed to the type's decoder.
	Node *yaml.Node
	// Config is the decoded block (a sources.Config); nil only in a
	// config that did not validate.
	Config SourceConfig
}

// Identity names what the source reads; see sources.Config.
func (s Source) Identity() string {
	if s.Config == nil {
		return ""
	}
	return s.Config.Identity()
}

// Load reads and validates the config file at path, every job's schedule
// included. Relative paths in source blocks are taken from the file's
// directory.
func Load(path string) (*Config, error) {
	cfg, _, err := Read(path)
	return cfg, err
}

// Read is Load that also returns the file's text: what discovery's host
// mode adds the host's jobs to (docs/discover.md).
func Read(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := ParseAt(data, path)
	if err != nil {
		return nil, nil, err
	}
	return cfg, data, nil
}

// ParseAt reads and validates data as the config file at path: relative
// paths are taken from path's directory.
func ParseAt(data []byte, path string) (*Config, error) {
	cfg, err := parse(bytes.NewReader(data), dirOf(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse reads and validates a config, every job's schedule included;
// relative paths stay as they are.
func Parse(r io.Reader) (*Config, error) {
	return parse(r, "")
}

func parse(r io.Reader, dir string) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	cfg := &Config{Dir: dir}
	var errs []error
	var f file
	if len(doc.Content) > 0 {
		errs = append(errs, Decode(&doc, &f, "", serviceBlockKeys()...)...)
	}
	cfg.StaleMultiple = f.StaleMultiple
	if cfg.StaleMultiple == 0 {
		cfg.StaleMultiple = DefaultStaleMultiple
	}
	if cfg.StaleMultiple < 1 {
		errs = append(errs, fmt.Errorf("stale_multiple must be at least 1, got %d", cfg.StaleMultiple))
	}
	cfg.Labels, cfg.AlertAfter = f.Labels, f.AlertAfter
	checkLabel := labelChecker()
	errs = append(errs, checkLabels(cfg.Labels, checkLabel)...)
	cfg.Maintenance = f.Maintenance
	errs = append(errs, validateWindows(cfg.Maintenance)...)
	errs = append(errs, cfg.decodeJobs(f.Jobs, checkLabel)...)
	errs = append(errs, checkAliases(cfg.Jobs, f.Jobs)...)
	cfg.withDefaults()
	errs = append(errs, cfg.decodeSources(f.Sources)...)
	errs = append(errs, cfg.decodeServiceBlocks(&doc)...)
	if f.Discovery.Kind != 0 {
		errs = append(errs, Prefix("discovery", Decode(&f.Discovery, &cfg.Discovery, ""))...)
	}
	errs = append(errs, Prefix("discovery", cfg.Discovery.validate(cfg.Path))...)
	if len(f.Jobs) == 0 && !cfg.Discovery.Watch {
		errs = append(errs, errors.New("no jobs configured (or discovery: {enabled: true, watch: true} to watch the host's cron jobs and timers)"))
	}
	if err := Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *Config) decodeJobs(nodes []yaml.Node, checkLabel func(string) error) []error {
	var errs []error
	seen := map[string]int{}                 // name -> line
	c.Jobs = slices.Grow(c.Jobs, len(nodes)) // kept as long as the config: no room to spare
	for i := range nodes {
		var j Job
		jobErrs := Decode(&nodes[i], &j, "")
		where := fmt.Sprintf("jobs[%d]", i)
		if j.Name != "" {
			where = fmt.Sprintf("job %q", j.Name)
		}
		// A field that did not decode is reported once, not again as a
		// schedule missing.
		decoded := len(jobErrs) == 0
		jobErrs = append(jobErrs, j.validate(decoded)...)
		jobErrs = append(jobErrs, checkLabels(j.Labels, checkLabel)...)
		if decoded {
			jobErrs = append(jobErrs, j.ScheduleSpec().Check()...)
		}
		if first, dup := seen[j.Name]; dup && j.Name != "" {
			jobErrs = append(jobErrs, fmt.Errorf("duplicate job name (line %d; first at line %d)", nodes[i].Line, first))
		} else {
			seen[j.Name] = nodes[i].Line
		}
		errs = append(errs, Prefix(where, jobErrs)...)
		c.Jobs = append(c.Jobs, j)
	}
	return errs
}

func (c *Config) decodeSources(nodes []yaml.Node) []error {
	var errs []error
	seen := map[string]int{} // name -> line
	jobs := c.JobNames()
	for i := range nodes {
		n := &nodes[i]
		var head struct {
			Name string `yaml:"name"`
			Type string `yaml:"type"`
		}
		var srcErrs []error
		if n.Kind != yaml.MappingNode {
			srcErrs = append(srcErrs, fmt.Errorf("line %d: a source must be a mapping", n.Line))
		} else if err := n.Decode(&head); err != nil {
			srcErrs = append(srcErrs, fmt.Errorf("line %d: name and type must be strings", n.Line))
		}
		s := Source{Name: head.Name, Type: head.Type, Line: n.Line, Node: n}
		where := fmt.Sprintf("sources[%d]", i)
		if s.Name != "" {
			where = fmt.Sprintf("source %q", s.Name)
		}
		switch {
		case s.Name == "":
			srcErrs = append(srcErrs, errors.New("name is required"))
		case !jobname.Valid(s.Name):
			srcErrs = append(srcErrs, fmt.Errorf("name %q must match %s", s.Name, jobname.Pattern))
		}
		if decode, ok := lookupSourceType(s.Type); ok && n.Kind == yaml.MappingNode {
			sc, blockErrs := decode(Block{Name: s.Name, Type: s.Type, Node: n, Resolve: c.Path, Jobs: jobs})
			srcErrs = append(srcErrs, blockErrs...)
			if len(blockErrs) == 0 {
				s.Config = sc
			}
		} else if !ok {
			srcErrs = append(srcErrs, fmt.Errorf("type must be one of %s, got %q", strings.Join(SourceTypes(), ", "), s.Type))
		}
		if first, dup := seen[s.Name]; dup && s.Name != "" {
			srcErrs = append(srcErrs, fmt.Errorf("duplicate source name (line %d; first at line %d)", n.Line, first))
		} else {
			seen[s.Name] = n.Line
		}
		errs = append(errs, Prefix(where, srcErrs)...)
		c.Sources = append(c.Sources, s)
	}
	return errs
}

// validate checks a job's fields; decoded says every field decoded, so
// that those left empty may be checked too.
func (j *Job) validate(decoded bool) []error {
	var errs []error
	switch {
	case j.Name == "":
		errs = append(errs, errors.New("name is required"))
	case !jobname.Valid(j.Name):
		errs = append(errs, fmt.Errorf("name %q must match %s", j.Name, jobname.Pattern))
	}
	if err := j.ScheduleSpec().CheckKinds(); err != nil && decoded {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"every", j.Every}, {"grace", j.Grace}, {"timeout", j.Timeout}, {"min_duration", j.MinDuration}, {"abandon_after", j.AbandonAfter}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.field))
		}
	}
	if j.Persistent && len(j.OnCalendar) == 0 {
		errs = append(errs, errors.New("persistent: applies only to on_calendar (a systemd timer's Persistent=)"))
	}
	if j.Timeout > 0 && j.MinDuration >= j.Timeout {
		errs = append(errs, fmt.Errorf("min_duration (%s) must be below timeout (%s)", j.MinDuration, j.Timeout))
	}
	if _, err := schedule.ParseFlavour(j.Cron); err != nil {
		errs = append(errs, fmt.Errorf("cron must be debian or cronie, got %q", j.Cron))
	} else if j.Cron != "" && j.Schedule == "" {
		errs = append(errs, errors.New("cron: applies only to schedule, not to every or on_calendar"))
	}
	switch j.Scope {
	case "", "host", "cluster":
	default:
		errs = append(errs, fmt.Errorf("scope must be host or cluster, got %q", j.Scope))
	}
	errs = append(errs, validateWindows(j.Maintenance)...)
	return errs
}

// ScheduleSpec is the job's schedule as package schedule reads it:
// schedule.New(j.ScheduleSpec(), local) is the job's schedule in a config
// that validated. A cron: that is not a flavour (which validate reports)
// reads as Debian's, so that it is reported once.
func (j *Job) ScheduleSpec() schedule.Spec {
	flavour, err := schedule.ParseFlavour(j.Cron)
	if err != nil {
		flavour = schedule.Debian
	}
	return schedule.Spec{
		Every:      j.Every.D(),
		Cron:       j.Schedule,
		OnCalendar: j.OnCalendar,
		Timezone:   j.Timezone,
		Flavour:    flavour,
	}
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
