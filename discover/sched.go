package discover

import (
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// cronSchedule reads a crontab line's time fields (or @-shortcut) in loc,
// and calendarSchedule a timer's OnCalendar expressions, exactly as
// jobwatch reads the schedule: and on_calendar: of the job discover writes
// for them: through schedule.New, the one entry point config uses too (a
// job's cron flavour, once discover writes one, goes in the Spec).
func cronSchedule(expr string, loc *time.Location) (schedule.Schedule, error) {
	return schedule.New(schedule.Spec{Cron: expr}, loc)
}

func calendarSchedule(exprs []string, loc *time.Location) (schedule.Schedule, error) {
	return schedule.New(schedule.Spec{OnCalendar: exprs}, loc)
}
