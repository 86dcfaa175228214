package config

import (
	"fmt"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a Go duration string in YAML ("90s", "1h30m").
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like 90s or 1h", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: bad duration %q: %w", n.Line, s, err)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

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
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("line %d: must be a string or a list of strings", n.Line)
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
