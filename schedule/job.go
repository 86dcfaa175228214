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
// cron ignores, ranges that match nothing), and OnCalendar expressions
// whose timer systemd 252 stops at one of the clock changes of the two
// years from from; each names its field.
func Warnings(j config.Job, local *time.Location, from time.Time) []string {
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
	for i, e := range j.OnCalendar {
		field := "on_calendar"
		if len(j.OnCalendar) > 1 {
			field = fmt.Sprintf("on_calendar[%d]", i)
		}
		z, err := parseOnCalendar(e, loc)
		if err != nil {
			continue
		}
		if w := z.systemdStops(from, from.AddDate(2, 0, 0)); w != "" {
			out = append(out, fmt.Sprintf("%s: %q: %s", field, e, w))
		}
	}
	return out
}

// stopWalk bounds the runs walked across one clock change: two days of a
// timer that elapses every minute.
const stopWalk = 3000

// systemdStops says where, between from and to, systemd computes no next
// elapse for the expression at a clock change although the calendar has
// more runs: the timer stops there (until systemd is restarted or
// reloaded, which computes again from then).
func (z *zoned) systemdStops(from, to time.Time) string {
	if z.sd == nil {
		return ""
	}
	for u := from.Unix(); u < to.Unix(); {
		p := periodAt(z.loc, u)
		if p.end == noEnd {
			break
		}
		x := time.Unix(p.end, 0)
		t := x.Add(-26 * time.Hour)
		for range stopWalk {
			n, err := z.NextErr(t)
			if err != nil {
				if c := z.calNext(t); !c.IsZero() {
					what := "systemd 252 computes no further elapse (\"Next elapse: never\")"
					if errors.Is(err, errCalendarLoop) {
						what = "systemd 252 fails to compute the next elapse (\"Failed to determine next elapse\")"
					}
					return fmt.Sprintf("%s after %s, at the clock change of %s: the timer stops there until systemd computes it again (restart or daemon-reload); jobwatch expects no run after it",
						what, t.In(z.loc).Format(time.RFC3339), x.In(z.loc).Format(time.RFC3339))
				}
				break
			}
			if n.After(x.Add(26 * time.Hour)) {
				break
			}
			t = n
		}
		u = p.end
	}
	return ""
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
		u.loc = u.showIn(loc)
		s = u
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}
