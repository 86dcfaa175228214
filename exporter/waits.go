package exporter

import (
	"fmt"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
)

// periodRuns is how many of a job's next runs waitWarnings looks at for
// its shortest period (a cron schedule's runs are not evenly spaced).
const periodRuns = 25

// waitWarnings are check-config's warnings of jobs whose period is shorter
// than twice the wait of a source of runs that may report them (any source
// of runs may: jobs do not name their sources): a job's verdicts (its
// slots, missed runs) wait for the watermark of its sources, so such a job
// is judged a period or more after its runs.
func waitWarnings(cfg *config.Config, jobs []model.JobSpec, now time.Time) []string {
	type wait struct {
		source string
		d      time.Duration
	}
	var waits []wait
	for _, sc := range cfg.Sources {
		if r, ok := sc.Config.(sources.RunReporter); ok {
			waits = append(waits, wait{sc.Name, sources.WaitOf(r)})
		}
	}
	var out []string
	for _, j := range jobs {
		period, ok := shortestPeriod(j.Schedule, now)
		if !ok {
			continue
		}
		for _, w := range waits {
			if period < 2*w.d {
				out = append(out, fmt.Sprintf("job %q: runs %s apart, less than twice the %s that source %q's watermark trails the clock: its verdicts (slots, missed runs) come after its next run is due (docs/schedules.md)",
					j.Name, period, w.d, w.source))
			}
		}
	}
	return out
}

// shortestPeriod is the shortest time between two of s's next runs after
// now; ok is false for a schedule without two.
func shortestPeriod(s schedule.Schedule, now time.Time) (time.Duration, bool) {
	if s == nil {
		return 0, false
	}
	runs := schedule.Upcoming(s, now, periodRuns)
	if len(runs) < 2 {
		return 0, false
	}
	shortest := runs[1].Sub(runs[0])
	for i := 2; i < len(runs); i++ {
		shortest = min(shortest, runs[i].Sub(runs[i-1]))
	}
	return shortest, true
}
