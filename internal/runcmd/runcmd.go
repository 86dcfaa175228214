// Package runcmd holds what the two sides of a `jobwatch run` command line
// agree on: package wrapper, which runs it, and package discover, which
// reads it in a crontab or a unit to write the config that watches the
// job. Both import this package and nothing of each other.
package runcmd

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jobwatch/jobwatch/internal/duration"
)

// DefaultLog is the run log `jobwatch run` appends to when --log is not
// given, and so the path of the runlog source discover writes for it.
const DefaultLog = "/var/log/jobwatch/runs.log"

// ParseDuration reads a duration flag of `jobwatch run` (--timeout,
// --kill-after, --lock-ttl) as the config file's durations are read
// (duration.Parse: Go's "90s", "1h30m", Prometheus' "1d", "2w") or, as
// timeout(1) does, a bare number of seconds ("90", "0.5").
func ParseDuration(s string) (time.Duration, error) {
	if d, err := duration.Parse(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("%q is not a duration (like 90s, 30m, 1h30m, 1d, or seconds)", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}
