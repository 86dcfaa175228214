package discover

import (
	"time"

	"jobwatch/config"
	"jobwatch/schedule"
)

// cronSchedule reads a crontab line's time fields (or @-shortcut) in loc,
// and calendarSchedule a timer's OnCalendar expressions, exactly as
// jobwatch reads the schedule: and on_calendar: of the job discover writes
// for them: through schedule.FromJob, the one entry point that follows the
// config (a job's cron flavour, once the config has one, goes here).
func cronSchedule(expr string, loc *time.Location) (schedule.Schedule, error) {
	return schedule.FromJob(config.Job{Name: "discover", Schedule: expr}, loc)
}

func calendarSchedule(exprs []string, loc *time.Location) (schedule.Schedule, error) {
	return schedule.FromJob(config.Job{Name: "discover", OnCalendar: exprs}, loc)
}
