package journal

import (
	"context"
	"fmt"
	"os"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/sources"
)

var _ sources.Checker = (*Source)(nil)

// CronDefaultsFile is where Check reads the host's cron -L from when
// cron_log_level is not set (tests point it elsewhere).
var CronDefaultsFile = cronlog.DefaultsFile

// Check warns, for check-config, when the cron whose lines the source
// reads logs its jobs' runs only in part: at the configured
// cron_log_level, or, reading the system journal with none configured, at
// the -L of /etc/default/cron (Debian's default 1 when it sets none).
func (j *Source) Check(context.Context) error {
	if len(j.cron) == 0 {
		return nil
	}
	level, from := j.cronLevel, "cron_log_level"
	if level == cronlog.Detect {
		if !j.askSystemd {
			return nil // another machine's journals: its cron's options are not here
		}
		data, err := os.ReadFile(CronDefaultsFile)
		if err != nil && !os.IsNotExist(err) {
			return nil
		}
		level, _ = cronlog.LevelOfDefaults(data)
		from = "EXTRA_OPTS of " + CronDefaultsFile
	}
	if gaps := cronlog.LevelGaps(level); gaps != "" {
		return sources.Warning(fmt.Sprintf("%s (%s); %s, then set cron_log_level: 15", gaps, from, cronlog.LevelFix))
	}
	return nil
}
