package exporter

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"jobwatch/config"
	"jobwatch/model"
	"jobwatch/schedule"
)

// DefaultCalendarGrace is how late a run of a cron or OnCalendar job may
// start and still belong to its expected time, when the job sets no grace:
// systemd timers fire within AccuracySec, one minute by default.
const DefaultCalendarGrace = time.Minute

// loadConfig reads the config file with the schedule checks config itself
// cannot make, so that every problem is reported at once.
func loadConfig(path string) (*config.Config, error) {
	return config.Load(path, schedule.Validate)
}

// JobSpecs turns the configured jobs into the model's job specs; local is
// the zone of schedules that name none (nil: the zone jobwatch runs in).
func JobSpecs(cfg *config.Config, local *time.Location) ([]model.JobSpec, error) {
	specs := make([]model.JobSpec, 0, len(cfg.Jobs))
	var errs []error
	for _, j := range cfg.Jobs {
		sched, err := schedule.FromJob(j, local)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", j.Name, err))
			continue
		}
		grace := j.Grace.D()
		if _, every := sched.(schedule.Every); !every && grace == 0 {
			grace = DefaultCalendarGrace
		}
		scope := j.Scope
		if scope == "" {
			scope = "host"
		}
		specs = append(specs, model.JobSpec{
			Name:          j.Name,
			Schedule:      sched,
			Grace:         grace,
			Timeout:       j.Timeout.D(),
			Scope:         scope,
			StaleMultiple: cfg.StaleMultiple,
		})
	}
	return specs, errors.Join(errs...)
}

// identity names what a source reads, so that its saved position follows it
// when it is renamed, or removed and configured again. A DSN may hold a
// password: only a hash of it is kept.
func identity(s config.Source) string {
	switch s.Type {
	case config.TypeRunLog:
		return "runlog:" + s.Path
	case config.TypeMySQL:
		h := sha256.Sum256([]byte(s.DSN + "\x00" + s.DSNFile))
		return "mysql:" + hex.EncodeToString(h[:8]) + ":" + s.Table
	case config.TypeJournal:
		return "journal:" + s.Directory + ":" + strings.Join(s.Files, ",")
	}
	return ""
}
