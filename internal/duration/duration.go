// Package duration reads durations as jobwatch's config file and its
// command lines write them: Go's syntax or Prometheus'. A leaf: it imports
// no other package of jobwatch.
package duration

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Parse reads a duration in Go's syntax (time.ParseDuration: "90s",
// "1h30m", "1.5h", "-5m") or in Prometheus' (model.ParseDuration of
// github.com/prometheus/common: "1d", "1w", "1y", "0"). Prometheus' parser
// is written out here rather than imported, so that config, every source
// package that decodes its block with it, and jobwatch run (which starts
// before the exporter's packages are initialised) import no Prometheus
// package; config's FuzzParseDurationMatchesPrometheus checks that both
// agree.
func Parse(s string) (time.Duration, error) {
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

// Format writes d as Prometheus writes durations (model.Duration's String:
// "1d", "1h30m", "500ms", "0s"), for messages that name a configured
// duration; below a millisecond, as Go writes it.
func Format(d time.Duration) string {
	if d < 0 {
		return "-" + Format(-d)
	}
	if d == 0 {
		return "0s"
	}
	if d%time.Millisecond != 0 {
		return d.String()
	}
	var b []byte
	ms := uint64(d / time.Millisecond)
	for _, u := range []struct {
		name  string
		ms    uint64
		exact bool // only when nothing is left: 90d reads better than 12w6d
	}{{"y", 365 * 24 * 3600 * 1000, true}, {"w", 7 * 24 * 3600 * 1000, true}, {"d", 24 * 3600 * 1000, false},
		{"h", 3600 * 1000, false}, {"m", 60 * 1000, false}, {"s", 1000, false}, {"ms", 1, false}} {
		if u.exact && ms%u.ms != 0 {
			continue
		}
		if n := ms / u.ms; n > 0 {
			b = strconv.AppendUint(b, n, 10)
			b = append(b, u.name...)
			ms -= n * u.ms
		}
	}
	return string(b)
}
