package config

import (
	"errors"
	"fmt"

	"github.com/jobwatch/jobwatch/schedule"
)

// Window is a maintenance window (maintenance: of a job or of the file):
// it opens at each time of its schedule, read as a job's own (schedule:
// or on_calendar:, in timezone: or jobwatch's zone), and lasts duration.
// Expected runs that fall in it are not judged, and the job is not stale
// (docs/ownership.md).
type Window struct {
	Schedule   string    `yaml:"schedule"`
	OnCalendar StringSet `yaml:"on_calendar"`
	Timezone   string    `yaml:"timezone"`
	Duration   Duration  `yaml:"duration"`
}

// ScheduleSpec is when the window opens, as package schedule reads it.
func (w *Window) ScheduleSpec() schedule.Spec {
	return schedule.Spec{Cron: w.Schedule, OnCalendar: w.OnCalendar, Timezone: w.Timezone}
}

// validateWindows checks each window, its problems named
// maintenance[i]: ...
func validateWindows(ws []Window) []error {
	var errs []error
	for i := range ws {
		w := &ws[i]
		var werrs []error
		if (w.Schedule == "") == (len(w.OnCalendar) == 0) {
			werrs = append(werrs, errors.New("exactly one of schedule and on_calendar is required"))
		} else {
			werrs = append(werrs, w.ScheduleSpec().Check()...)
		}
		if w.Duration <= 0 {
			werrs = append(werrs, errors.New("duration is required, and must be positive"))
		}
		errs = append(errs, Prefix(fmt.Sprintf("maintenance[%d]", i), werrs)...)
	}
	return errs
}
