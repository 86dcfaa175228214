package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a duration in YAML, in Go's syntax ("90s", "1h30m", "500ms")
// or Prometheus' ("1d", "1w", "2h30m").
type Duration time.Duration

// UnmarshalYAML reads a duration. A bad one is a *yaml.TypeError, so that
// decoding goes on and every problem of the file is reported at once.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return typeError(n, "duration must be a string like 90s, 1h30m or 1d")
	}
	v, err := ParseDuration(s)
	if err != nil {
		return typeError(n, fmt.Sprintf("bad duration %q: %v", s, err))
	}
	*d = Duration(v)
	return nil
}

func typeError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, msg)}}
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ParseDuration reads a duration in Go's syntax (time.ParseDuration: "90s",
// "1h30m", "1.5h", "-5m") or in Prometheus' (model.ParseDuration of
// github.com/prometheus/common: "1d", "1w", "1y", "0"). Prometheus' parser
// is written out here rather than imported, so that config, and every
// source package that decodes its block with it, imports no Prometheus
// package; a test checks that both agree.
func ParseDuration(s string) (time.Duration, error) {
	if v, err := time.ParseDuration(s); err == nil {
		return v, nil
	}
	v, err := parsePromDuration(s)
	switch {
	case errors.Is(err, errPromSyntax):
		return 0, errors.New("want a duration like 90s, 1h30m, 500ms, 1d or 1w")
	case err != nil:
		return 0, fmt.Errorf("want a duration like 90s, 1h30m, 500ms, 1d or 1w: %w", err)
	}
	return v, nil
}

// promUnits are Prometheus' duration units, biggest first.
var promUnits = []struct {
	name string
	mult uint64
}{
	{"y", uint64(365 * 24 * time.Hour)}, {"w", uint64(7 * 24 * time.Hour)}, {"d", uint64(24 * time.Hour)},
	{"h", uint64(time.Hour)}, {"m", uint64(time.Minute)}, {"s", uint64(time.Second)}, {"ms", uint64(time.Millisecond)},
}

var errPromSyntax = errors.New("not a valid duration")

// parsePromDuration accepts what model.ParseDuration accepts: "0", or
// integers each followed by a unit, units in decreasing order, each once.
func parsePromDuration(s string) (time.Duration, error) {
	switch s {
	case "0":
		return 0, nil
	case "":
		return 0, errors.New("empty duration")
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	var dur uint64
	next := 0 // index in promUnits of the smallest unit still allowed first
	for s != "" {
		i := 0
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == 0 {
			return 0, errPromSyntax
		}
		v, err := strconv.ParseUint(s[:i], 10, 64)
		if err != nil {
			return 0, errPromSyntax
		}
		s = s[i:]
		j := 0
		for j < len(s) && !isDigit(s[j]) {
			j++
		}
		if j == 0 {
			return 0, errPromSyntax
		}
		u := s[:j]
		s = s[j:]
		k := -1
		for x, pu := range promUnits {
			if pu.name == u {
				k = x
			}
		}
		if k < 0 {
			return 0, fmt.Errorf("unknown unit %q", u)
		}
		if k < next {
			return 0, errPromSyntax // units must go from biggest to smallest
		}
		next = k + 1
		if v > 1<<63/promUnits[k].mult {
			return 0, errors.New("duration out of range")
		}
		dur += v * promUnits[k].mult
		if dur > 1<<63-1 {
			return 0, errors.New("duration out of range")
		}
	}
	return time.Duration(dur), nil
}

// StringSet is a YAML string or list of strings.
type StringSet []string

func (s *StringSet) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v string
		if err := n.Decode(&v); err != nil {
			return err
		}
		*s = StringSet{v}
		return nil
	}
	var v []string
	if n.Kind != yaml.SequenceNode || n.Decode(&v) != nil {
		return typeError(n, "must be a string or a list of strings")
	}
	*s = v
	return nil
}

// Path resolves p against the config file's directory.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Dir == "" {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func dirOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Dir(path)
	}
	return filepath.Dir(abs)
}
