// Package labelname is the rule for the names of the labels a config
// gives its jobs (labels:, docs/ownership.md): the pattern Prometheus
// allows, less the names that are not the config's to give. Those are
// Prometheus' and Alertmanager's own and every label name of jobwatch's
// metrics, which the packages that make the metrics register (Reserve),
// so that the list follows the metrics and is never kept by hand.
package labelname

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Pattern is the rule a label name keeps, as Prometheus writes it.
const Pattern = `[a-zA-Z_][a-zA-Z0-9_]*`

var patternRE = regexp.MustCompile(`^` + Pattern + `$`)

// builtin are the names Prometheus and Alertmanager give series and
// alerts themselves: the target's labels, a histogram's bucket, a
// summary's quantile, an alert's name and the bundled rules' severity.
var builtin = []string{"alertname", "instance", "job", "le", "quantile", "severity"}

var (
	mu        sync.Mutex
	providers []func() []string
)

// Reserve registers the label names of a package's metrics: names is
// called when the list is read (Reserved), so that it may list what other
// packages register later (kinds of observation, services).
func Reserve(names func() []string) {
	mu.Lock()
	defer mu.Unlock()
	providers = append(providers, names)
}

// Reserved lists the reserved names, sorted: builtin and every registered
// package's. Names starting with __ are reserved besides.
func Reserved() []string {
	mu.Lock()
	ps := slices.Clone(providers)
	mu.Unlock()
	out := slices.Clone(builtin)
	for _, p := range ps {
		out = append(out, p()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Check says why name may not be a job's label, nil if it may.
func Check(name string) error {
	return check(name, Reserved())
}

// Checker checks many names against one reading of the reserved list.
func Checker() func(name string) error {
	reserved := Reserved()
	return func(name string) error { return check(name, reserved) }
}

func check(name string, reserved []string) error {
	switch {
	case !patternRE.MatchString(name):
		return fmt.Errorf("label name %q must match %s", name, Pattern)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("label name %q is reserved: names starting with __ are Prometheus' own", name)
	case slices.Contains(reserved, name):
		return fmt.Errorf("label name %q is reserved: jobwatch's metrics, Prometheus or Alertmanager use it", name)
	}
	return nil
}
