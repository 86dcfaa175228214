package runlog

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// Type is the type of source this package reads.
const Type = "runlog"

func init() { sources.Register(Type, decode) }

// DefaultLateWindow is a run log's late window: a record is appended
// when its run starts or ends and read within about a second (the
// tailer's poll), so it is handed over at most this long after its time.
const DefaultLateWindow = 2 * time.Second

// Config is the block of a type: runlog source.
type Config struct {
	Path string `yaml:"path"`
	// Lateness is the late_window key as written (0: the default); see
	// LateWindow.
	Lateness      config.Duration `yaml:"late_window"`
	record.Config `yaml:",inline"`
}

var (
	_ sources.Config      = (*Config)(nil)
	_ sources.RunReporter = (*Config)(nil)
)

// LateWindow is how late, in event time, a record may be handed over: the
// late_window key, defaulted.
func (c *Config) LateWindow() time.Duration {
	return sources.LateWindowOf(c.Lateness, DefaultLateWindow)
}

// Identity is the file followed: its saved position follows the path.
func (c *Config) Identity() string { return "runlog:" + c.Path }

// New builds the source.
func (c *Config) New(name string, deps sources.Deps) (sources.Source, error) {
	return New(name, *c, deps)
}

func decode(b config.Block) (sources.Config, []error) {
	var c Config
	errs := config.DecodeBlock(b, &c)
	errs = append(errs, c.validate(b.Jobs)...)
	c.Path = b.Resolve(c.Path)
	return &c, errs
}

// validate checks the block; jobs, when not nil, are the configured jobs
// that commands may name.
func (c *Config) validate(jobs map[string]bool) []error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if err := sources.CheckLateWindow(c.Lateness); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateFormat()...)
	errs = append(errs, c.validateCommands(jobs)...)
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			errs = append(errs, fmt.Errorf("timezone %q: unknown zone", c.Timezone))
		}
	}
	groups := map[string]bool{}
	for _, g := range record.PatternGroups {
		groups[g] = true
	}
	for i, p := range c.Patterns {
		errs = append(errs, validatePattern(i, p, groups)...)
	}
	return errs
}

// validateFormat checks the format and the keys that only some formats take.
func (c *Config) validateFormat() []error {
	var errs []error
	switch c.Format {
	case "json", "logfmt":
		if len(c.Patterns) > 0 {
			errs = append(errs, fmt.Errorf("patterns are only for format regex"))
		}
	case "regex":
		if len(c.Patterns) == 0 {
			errs = append(errs, errors.New("format regex needs at least one pattern"))
		}
	case "cron":
		if len(c.Patterns) > 0 {
			errs = append(errs, fmt.Errorf("patterns are only for format regex (format cron maps commands with commands)"))
		}
		if c.TimeFormat != "" {
			errs = append(errs, fmt.Errorf("time_format is not for format cron: it reads syslog's timestamps"))
		}
	case "":
		errs = append(errs, errors.New("format is required (json, logfmt, regex, cron)"))
	default:
		errs = append(errs, fmt.Errorf("format must be json, logfmt, regex or cron, got %q", c.Format))
	}
	if c.Format != "cron" {
		if len(c.Commands) > 0 {
			errs = append(errs, errors.New("commands are only for format cron"))
		}
		if c.CronLogLevel != nil {
			errs = append(errs, errors.New("cron_log_level is only for format cron"))
		}
	}
	if l := c.LogLevel(); l < 0 || l > 15 {
		errs = append(errs, fmt.Errorf("cron_log_level must be 0 to 15 (cron's -L), got %d", l))
	}
	return errs
}

// validateCommands checks that each command has a match and a known job.
func (c *Config) validateCommands(jobs map[string]bool) []error {
	var errs []error
	for i, m := range c.Commands {
		if _, err := regexp.Compile(m.Match); err != nil {
			errs = append(errs, fmt.Errorf("commands[%d].match: %w", i, err))
		} else if m.Match == "" {
			errs = append(errs, fmt.Errorf("commands[%d].match is required", i))
		}
		switch {
		case m.Job == "":
			errs = append(errs, fmt.Errorf("commands[%d].job is required", i))
		case jobs != nil && !jobs[m.Job]:
			errs = append(errs, fmt.Errorf("commands[%d].job: unknown job %q", i, m.Job))
		}
	}
	return errs
}

// validatePattern checks patterns[i]: its regex's groups are among groups
// and give, or p names, the time, job and event a record needs.
func validatePattern(i int, p record.Pattern, groups map[string]bool) []error {
	re, err := regexp.Compile(p.Regex)
	if err != nil {
		return []error{fmt.Errorf("patterns[%d].regex: %w", i, err)}
	}
	var errs []error
	has := map[string]bool{}
	for _, name := range re.SubexpNames()[1:] {
		if name == "" {
			continue
		}
		if !groups[name] {
			errs = append(errs, fmt.Errorf("patterns[%d].regex: unknown group %q (known: %v)", i, name, record.PatternGroups))
		}
		has[name] = true
	}
	if !has["time"] {
		errs = append(errs, fmt.Errorf("patterns[%d].regex: a (?P<time>...) group is required", i))
	}
	if !has["job"] && p.Job == "" {
		errs = append(errs, fmt.Errorf("patterns[%d]: needs a (?P<job>...) group or a job", i))
	}
	if !has["event"] && p.Event == "" {
		errs = append(errs, fmt.Errorf("patterns[%d]: needs an (?P<event>...) group or an event", i))
	}
	if p.Event != "" && p.Event != "start" && p.Event != "end" && p.Event != "skip" {
		errs = append(errs, fmt.Errorf("patterns[%d].event must be start, end, skip or lock_lost, got %q", i, p.Event))
	}
	if _, ok := model.ParseStatus(p.Status); p.Status != "" && !ok {
		errs = append(errs, fmt.Errorf("patterns[%d].status must be success, failure, timeout or skipped, got %q", i, p.Status))
	}
	return errs
}
