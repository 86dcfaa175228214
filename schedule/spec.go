package schedule

import (
	"errors"
	"fmt"
	"time"
)

// Spec is a job's schedule as plain values, named after the fields of
// jobwatch.yml that hold them: exactly one of Every, Cron and OnCalendar is
// set. Package config fills one for every job; discover, for what it reads
// from a crontab or a timer.
type Spec struct {
	Every      time.Duration // every:
	Cron       string        // schedule: a crontab line's time fields, or an @-shortcut
	OnCalendar []string      // on_calendar: systemd OnCalendar expressions
	// Timezone (timezone:) is the zone Cron and OnCalendar are read in;
	// "" is the local zone.
	Timezone string
	// Flavour (cron:) is the cron daemon that reads Cron; "" is Debian.
	Flavour Flavour
}

// New returns the schedule of a spec. Cron and OnCalendar expressions are
// read in the spec's timezone, or in local (the zone jobwatch runs in; nil
// means time.Local) when it has none; a CRON_TZ= prefix (cronie) or an
// OnCalendar zone suffix wins over both. Errors name the field, e.g.
// `schedule: "0 0 30 2 *": never fires: ...` or `on_calendar[1]: ...`. A
// spec CheckKinds refuses gets that error alone; otherwise all problems are
// joined into one error.
func New(s Spec, local *time.Location) (Schedule, error) {
	if err := s.CheckKinds(); err != nil {
		return nil, err
	}
	sched, errs := s.parse(local)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return sched, nil
}

// CheckKinds reports a spec that sets not exactly one of Every, Cron and
// OnCalendar.
func (s Spec) CheckKinds() error {
	kinds := 0
	for _, set := range []bool{s.Every > 0, s.Cron != "", len(s.OnCalendar) > 0} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("exactly one of every, schedule and on_calendar is required, got %d", kinds)
	}
	return nil
}

// Check returns every problem with a spec's fields (schedule, on_calendar,
// timezone, cron), each naming its field. It does not repeat CheckKinds:
// when several kinds are set, each is checked.
func (s Spec) Check() []error {
	_, errs := s.parse(time.UTC)
	return errs
}

// Warnings returns what check-config should say about a valid spec: where
// the scheduler reads it differently from what it seems to say (a CRON_TZ
// that Debian's cron ignores, parts of a crontab field that cron ignores,
// ranges that match nothing), and OnCalendar expressions whose timer
// systemd 252 stops at one of the clock changes of the two years from
// from; each names its field.
func (s Spec) Warnings(local *time.Location, from time.Time) []string {
	if local == nil {
		local = time.Local
	}
	loc := local
	if s.Timezone != "" {
		if l, err := loadZone(s.Timezone); err == nil {
			loc = l
		}
	}
	var out []string
	if s.Cron != "" {
		for _, w := range CronWarnings(s.Cron, loc, s.flavour()) {
			out = append(out, fmt.Sprintf("schedule: %q: %s", s.Cron, w))
		}
	}
	for i, e := range s.OnCalendar {
		z, err := parseOnCalendar(e, loc)
		if err != nil {
			continue
		}
		if w := z.systemdStops(from, from.AddDate(2, 0, 0)); w != "" {
			out = append(out, fmt.Sprintf("%s: %q: %s", s.calendarField(i), e, w))
		}
	}
	return out
}

// flavour is the spec's cron flavour; an unknown one, which parse
// reports, reads as Debian.
func (s Spec) flavour() Flavour {
	if f, err := ParseFlavour(string(s.Flavour)); err == nil {
		return f
	}
	return Debian
}

// calendarField names the i-th OnCalendar expression in errors.
func (s Spec) calendarField(i int) string {
	if len(s.OnCalendar) > 1 {
		return fmt.Sprintf("on_calendar[%d]", i)
	}
	return "on_calendar"
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

// parse reads every field that is set, collecting the problems of all.
func (s Spec) parse(local *time.Location) (Schedule, []error) {
	var errs []error
	if local == nil {
		local = time.Local
	}
	loc := local
	if s.Timezone != "" {
		l, err := loadZone(s.Timezone)
		if err != nil {
			errs = append(errs, fmt.Errorf("timezone: %w", err))
		} else {
			loc = l
		}
		if s.Cron == "" && len(s.OnCalendar) == 0 {
			errs = append(errs, errors.New("timezone: applies only to schedule and on_calendar, not to every"))
		}
	}
	if _, err := ParseFlavour(string(s.Flavour)); err != nil {
		errs = append(errs, fmt.Errorf("cron: %w", err))
	}
	var sched Schedule
	if s.Every > 0 {
		sched = Every(s.Every)
	}
	if s.Cron != "" {
		z, _, err := parseCron(s.Cron, loc, s.flavour())
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule: %q: %w", s.Cron, err))
		} else {
			sched = z
		}
	}
	if len(s.OnCalendar) > 0 {
		u := &union{loc: loc}
		for i, e := range s.OnCalendar {
			z, err := parseOnCalendar(e, loc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", s.calendarField(i), e, err))
				continue
			}
			u.parts = append(u.parts, z)
		}
		u.loc = u.showIn(loc)
		sched = u
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sched, nil
}
