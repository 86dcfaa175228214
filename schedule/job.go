package schedule

import (
	"errors"
	"fmt"
	"time"

	"jobwatch/config"
)

// FromJob returns the schedule of a job: exactly one of every, schedule
// (cron) and on_calendar must be set. Cron and OnCalendar expressions are
// read in the job's timezone, or in local (the zone jobwatch runs in; nil
// means time.Local) when it has none; a CRON_TZ= prefix or an OnCalendar
// zone suffix wins over both. Errors name the field, e.g.
// `schedule: "0 0 30 2 *": never fires: ...` or `on_calendar[1]: ...`; all
// problems are joined into one error.
func FromJob(j config.Job, local *time.Location) (Schedule, error) {
	if err := j.CheckScheduleKinds(); err != nil {
		return nil, err
	}
	s, errs := fromJob(j, local)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Validate returns every problem with a job's schedule fields (schedule,
// on_calendar, timezone), each naming its field. It does not repeat the
// "exactly one of every, schedule and on_calendar" check, which
// config.Job.validate makes; when several kinds are set, each is checked.
func Validate(j config.Job) []error {
	_, errs := fromJob(j, time.UTC)
	return errs
}

// Warnings returns what check-config should say about a valid job's
// schedule: where the scheduler reads it differently from what it seems to
// say (a CRON_TZ that Debian's cron ignores, parts of a crontab field that
// cron ignores, ranges that match nothing), each naming its field.
func Warnings(j config.Job, local *time.Location) []string {
	if local == nil {
		local = time.Local
	}
	loc := local
	if j.Timezone != "" {
		if l, err := loadZone(j.Timezone); err == nil {
			loc = l
		}
	}
	var out []string
	if j.Schedule != "" {
		flavour, _ := ParseFlavour(j.Cron)
		for _, w := range CronWarnings(j.Schedule, loc, flavour) {
			out = append(out, fmt.Sprintf("schedule: %q: %s", j.Schedule, w))
		}
	}
	return out
}

func fromJob(j config.Job, local *time.Location) (Schedule, []error) {
	var errs []error
	if local == nil {
		local = time.Local
	}
	loc := local
	if j.Timezone != "" {
		l, err := loadZone(j.Timezone)
		if err != nil {
			errs = append(errs, fmt.Errorf("timezone: %w", err))
		} else {
			loc = l
		}
		if j.Schedule == "" && len(j.OnCalendar) == 0 {
			errs = append(errs, errors.New("timezone: applies only to schedule and on_calendar, not to every"))
		}
	}
	var s Schedule
	if j.Every > 0 {
		s = Every(j.Every)
	}
	if j.Schedule != "" {
		// config validates the flavour; an unknown one reads as Debian.
		flavour, _ := ParseFlavour(j.Cron)
		z, _, err := parseCron(j.Schedule, loc, flavour)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule: %q: %w", j.Schedule, err))
		} else {
			s = z
		}
	}
	if len(j.OnCalendar) > 0 {
		u := &union{loc: loc}
		for i, e := range j.OnCalendar {
			field := "on_calendar"
			if len(j.OnCalendar) > 1 {
				field = fmt.Sprintf("on_calendar[%d]", i)
			}
			z, err := parseOnCalendar(e, loc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", field, e, err))
				continue
			}
			u.parts = append(u.parts, z)
		}
		s = u
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}
