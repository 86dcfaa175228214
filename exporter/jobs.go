package exporter

import (
	"fmt"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	_ "github.com/jobwatch/jobwatch/sources/all" // every type of source, for the config
)

// DefaultCalendarGrace is how late a run of a cron or OnCalendar job may
// start and still belong to its expected time, when the job sets no grace:
// systemd timers fire within AccuracySec, one minute by default.
const DefaultCalendarGrace = time.Minute

// JobSpecs turns the configured jobs into the model's job specs; local is
// the zone of schedules that name none (nil: the zone jobwatch runs in).
func JobSpecs(cfg *config.Config, local *time.Location) ([]model.JobSpec, error) {
	specs := make([]model.JobSpec, 0, len(cfg.Jobs))
	var errs []error
	for _, j := range cfg.Jobs {
		sched, err := schedule.New(j.ScheduleSpec(), local)
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
		windows, err := maintenanceWindows(append(slices.Clip(cfg.Maintenance), j.Maintenance...), local)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", j.Name, err))
			continue
		}
		specs = append(specs, model.JobSpec{
			Name:          j.Name,
			Schedule:      sched,
			Grace:         grace,
			Timeout:       j.Timeout.D(),
			MinDuration:   j.MinDuration.D(),
			AbandonAfter:  j.AbandonAfter.D(),
			Persistent:    j.Persistent,
			Scope:         scope,
			StaleMultiple: cfg.StaleMultiple,
			Labels:        j.Labels,
			AlertAfter: model.AlertAfter{
				Failures: int(j.AlertAfter.Failures), MissedRuns: int(j.AlertAfter.MissedRuns), Skips: int(j.AlertAfter.Skips),
			},
			Maintenance: windows,
		})
	}
	return specs, config.Join(errs...)
}

// maintenanceWindows are the model's windows of the file's and a job's
// maintenance: (config.Window), read in local as the job's schedule is.
func maintenanceWindows(ws []config.Window, local *time.Location) ([]model.Window, error) {
	var out []model.Window
	for i := range ws {
		sched, err := schedule.New(ws[i].ScheduleSpec(), local)
		if err != nil {
			return nil, fmt.Errorf("maintenance[%d]: %w", i, err)
		}
		out = append(out, model.Window{Schedule: sched, Duration: ws[i].Duration.D()})
	}
	return out, nil
}
