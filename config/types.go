package config

import (
	"fmt"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/internal/duration"
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

// String writes the duration as Prometheus does ("1d", "1h30m").
func (d Duration) String() string { return duration.Format(time.Duration(d)) }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ParseDuration reads a duration in Go's syntax (time.ParseDuration: "90s",
// "1h30m", "1.5h", "-5m") or in Prometheus' (model.ParseDuration of
// github.com/prometheus/common: "1d", "1w", "1y", "0"): duration.Parse,
// which jobwatch run's duration flags read too.
func ParseDuration(s string) (time.Duration, error) { return duration.Parse(s) }

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
