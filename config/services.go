package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/units"
	"go.yaml.in/yaml/v3"
)

// Discovery makes jobwatch serve look at the host's crontabs and timers
// every Interval (docs/discover.md).
type Discovery struct {
	Enabled bool `yaml:"enabled"`
	// Watch is host mode: every job discovery finds that no configured job
	// watches is watched too, with the sources that see its runs; jobs:
	// may then be empty.
	Watch    bool     `yaml:"watch"`
	Root     string   `yaml:"root"`
	Interval Duration `yaml:"interval"`
	// RetiredRetention is how long host mode keeps the history of a job
	// that has gone from the host (retired) before forgetting it.
	RetiredRetention Duration `yaml:"retired_retention"`
}

// Discovery defaults and bounds.
const (
	DefaultDiscoveryInterval = 5 * time.Minute
	minDiscoveryInterval     = 10 * time.Second
	// DefaultRetiredRetention: a week, to look back at a job removed on
	// purpose, or to take it up again when it comes back.
	DefaultRetiredRetention = 7 * 24 * time.Hour
)

// ByteSize is a size in bytes, written as a number or with a unit (100KiB,
// 1MB: units are powers of 1024, as in Prometheus' configs).
type ByteSize int64

func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: a size must be a number of bytes or like 100KiB", n.Line)
	}
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*b = ByteSize(v)
		return nil
	}
	v, err := units.ParseBase2Bytes(strings.Replace(s, "iB", "B", 1))
	if err != nil {
		return fmt.Errorf("line %d: bad size %q: want a number of bytes or like 100KiB, 10MiB", n.Line, s)
	}
	*b = ByteSize(v)
	return nil
}

func (d *Discovery) validate(resolve func(string) string) []error {
	var errs []error
	if d.Watch && !d.Enabled {
		errs = append(errs, errors.New("watch: true requires enabled: true"))
	}
	if d.Interval == 0 {
		d.Interval = Duration(DefaultDiscoveryInterval)
	}
	if d.Interval.D() < minDiscoveryInterval {
		errs = append(errs, fmt.Errorf("interval must be at least %s, got %s", minDiscoveryInterval, d.Interval.D()))
	}
	switch {
	case d.RetiredRetention == 0:
		d.RetiredRetention = Duration(DefaultRetiredRetention)
	case d.RetiredRetention < 0:
		errs = append(errs, fmt.Errorf("retired_retention must be positive, like 7d, got %s", d.RetiredRetention))
	}
	if d.Root == "" {
		d.Root = "/"
	}
	d.Root = resolve(d.Root)
	if d.Root == "" {
		errs = append(errs, errors.New("root must not be empty"))
	}
	return errs
}
