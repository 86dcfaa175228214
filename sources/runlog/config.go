package config

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// RunLog is the config of a type: runlog source.
type RunLog struct {
	Path       string    `yaml:"path"`
	Format     string    `yaml:"format"`      // json | logfmt | regex
	TimeFormat string    `yaml:"time_format"` // Go layout; default RFC 3339
	Timezone   string    `yaml:"timezone"`    // for times without an offset
	Patterns   []Pattern `yaml:"patterns"`
}

// Pattern is one regular expression of a format: regex source. Named groups
// carry record fields; the other fields give fixed values for fields the line
// does not carry.
type Pattern struct {
	Regex    string `yaml:"regex"`
	Job      string `yaml:"job"`
	Event    string `yaml:"event"`
	Status   string `yaml:"status"`
	Reason   string `yaml:"reason"`
	Host     string `yaml:"host"`
	ExitCode *int   `yaml:"exit_code"`
}

// PatternGroups are the named groups a pattern may use.
var PatternGroups = []string{"time", "job", "event", "pid", "host", "status", "exit_code", "run_id", "reason", "duration_seconds", "holder_pid"}

func (r *RunLog) setFields() []string {
	var f []string
	if r.Path != "" {
		f = append(f, "path")
	}
	if r.Format != "" {
		f = append(f, "format")
	}
	if r.TimeFormat != "" {
		f = append(f, "time_format")
	}
	if r.Timezone != "" {
		f = append(f, "timezone")
	}
	if len(r.Patterns) > 0 {
		f = append(f, "patterns")
	}
	return f
}

func (r *RunLog) validate(*Config) []error {
	var errs []error
	if r.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	switch r.Format {
	case "json", "logfmt":
		if len(r.Patterns) > 0 {
			errs = append(errs, fmt.Errorf("patterns are only for format regex"))
		}
	case "regex":
		if len(r.Patterns) == 0 {
			errs = append(errs, errors.New("format regex needs at least one pattern"))
		}
	default:
		errs = append(errs, fmt.Errorf("format must be json, logfmt or regex, got %q", r.Format))
	}
	if r.Timezone != "" {
		if _, err := time.LoadLocation(r.Timezone); err != nil {
			errs = append(errs, fmt.Errorf("timezone %q: unknown zone", r.Timezone))
		}
	}
	groups := map[string]bool{}
	for _, g := range PatternGroups {
		groups[g] = true
	}
	for i, p := range r.Patterns {
		re, err := regexp.Compile(p.Regex)
		if err != nil {
			errs = append(errs, fmt.Errorf("patterns[%d].regex: %w", i, err))
			continue
		}
		has := map[string]bool{}
		for _, name := range re.SubexpNames()[1:] {
			if name == "" {
				continue
			}
			if !groups[name] {
				errs = append(errs, fmt.Errorf("patterns[%d].regex: unknown group %q (known: %v)", i, name, PatternGroups))
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
			errs = append(errs, fmt.Errorf("patterns[%d].event must be start, end or skip, got %q", i, p.Event))
		}
		if p.Status != "" && p.Status != "success" && p.Status != "failure" && p.Status != "timeout" {
			errs = append(errs, fmt.Errorf("patterns[%d].status must be success, failure or timeout, got %q", i, p.Status))
		}
	}
	return errs
}
