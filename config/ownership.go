package config

import (
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/internal/labelname"
)

// Labels are a job's labels (labels:): its owner's team, tier, ... that
// every alert about the job carries, for Alertmanager to route on
// (docs/ownership.md). Values come from the config alone.
type Labels map[string]string

// UnmarshalYAML reads a mapping of label names to string values; a bad
// one is a *yaml.TypeError, so that decoding goes on.
func (l *Labels) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return typeError(n, "labels must be a mapping of label names to values, like {team: payments}")
	}
	out := make(Labels, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return typeError(v, fmt.Sprintf("label %q: the value must be a string", k.Value))
		}
		out[k.Value] = v.Value
	}
	*l = out
	return nil
}

// AlertAfter is how many failures, missed runs or skips in a row make the
// bundled rules alert on a job (alert_after:); 0 is not set, which leaves
// the file's, or else the rules' default (model.DefaultAlertAfter: 2
// failures, 1 missed run, 3 skips).
type AlertAfter struct {
	Failures   Threshold `yaml:"failures"`
	MissedRuns Threshold `yaml:"missed_runs"`
	Skips      Threshold `yaml:"skips"`
}

// Threshold is a count of runs in a row, at least 1.
type Threshold int

// UnmarshalYAML reads a threshold; a bad one is a *yaml.TypeError, so
// that decoding goes on.
func (t *Threshold) UnmarshalYAML(n *yaml.Node) error {
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || v < 1 {
		return typeError(n, fmt.Sprintf("alert_after counts must be whole numbers of at least 1, got %q", n.Value))
	}
	*t = Threshold(v)
	return nil
}

// Or is a with what it leaves unset taken from b.
func (a AlertAfter) Or(b AlertAfter) AlertAfter {
	return AlertAfter{Failures: cmpOr(a.Failures, b.Failures), MissedRuns: cmpOr(a.MissedRuns, b.MissedRuns), Skips: cmpOr(a.Skips, b.Skips)}
}

func cmpOr(a, b Threshold) Threshold {
	if a != 0 {
		return a
	}
	return b
}

// checkLabels reports every label name of l that a job may not have,
// sorted by name.
func checkLabels(l Labels, check func(string) error) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if err := check(k); err != nil {
			errs = append(errs, fmt.Errorf("labels: %w", err))
		}
	}
	return errs
}

// withDefaults gives each job the file's labels and alert_after under its
// own: a key or count the job sets wins.
func (c *Config) withDefaults() {
	for i := range c.Jobs {
		j := &c.Jobs[i]
		if len(c.Labels) > 0 {
			merged := maps.Clone(c.Labels)
			maps.Copy(merged, j.Labels)
			j.Labels = merged
		}
		j.AlertAfter = j.AlertAfter.Or(c.AlertAfter)
	}
}

// labelChecker is labelname's checker: the names registered by the
// packages linked in (the collector's metrics' among them).
var labelChecker = labelname.Checker
