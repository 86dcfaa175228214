package discover

import (
	"fmt"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// transition is a change of a zone's UTC offset.
type transition struct {
	at           time.Time
	prevOff, off int // seconds east of UTC before and after
}

// transitions returns the offset changes of loc in [from, from+1 year).
func transitions(loc *time.Location, from time.Time) []transition {
	var out []transition
	end := from.AddDate(1, 0, 0)
	t := from.In(loc)
	for i := 0; i < 64 && t.Before(end); i++ {
		_, e := t.ZoneBounds()
		if e.IsZero() || !e.After(t) {
			// Go reports no (or a bad) end for some rule-based periods;
			// step a day and look again.
			t = t.Add(24 * time.Hour)
			continue
		}
		if !e.Before(end) {
			break
		}
		_, p := e.Add(-time.Second).Zone()
		_, o := e.Zone()
		if p != o {
			out = append(out, transition{at: e, prevOff: p, off: o})
		}
		t = e
	}
	return out
}

// fixedTime reports a cron job that cron treats as fixed-time: minute and
// hour fields without '*' (@hourly is a wildcard job, the other shortcuts
// fixed-time).
func fixedTime(expr string) bool {
	f := strings.Fields(expr)
	if len(f) == 1 {
		return f[0] != "@hourly"
	}
	return len(f) >= 2 && !strings.HasPrefix(f[0], "*") && !strings.HasPrefix(f[1], "*")
}

// checkDST finds the job's wall-clock times that the next year's DST
// changes of its zone skip or repeat, and says what cron and systemd each
// do with them.
func checkDST(j *Job, now time.Time) []Finding {
	if j.Zone == nil || j.Every > 0 {
		return nil
	}
	var exprs [][]string // one schedule each, read on a zone-less (UTC) clock
	switch {
	case j.Schedule != "":
		if !fixedTime(j.Schedule) {
			return nil
		}
		exprs = [][]string{{j.Schedule}}
	default:
		for _, e := range j.OnCalendar {
			f := strings.Fields(e)
			if len(f) > 1 && loadZone(f[len(f)-1]) != nil {
				continue // an expression with its own zone
			}
			exprs = append(exprs, []string{e})
		}
	}
	var out []Finding
	seen := map[bool]bool{} // report one gap and one repeat
	for _, tr := range transitions(j.Zone, now) {
		gap := tr.off > tr.prevOff
		if seen[gap] {
			continue
		}
		lo, hi := tr.prevOff, tr.off // the affected wall clock: [at+lo, at+hi)
		if !gap {
			lo, hi = tr.off, tr.prevOff
		}
		cw0 := time.Unix(tr.at.Unix()+int64(lo), 0).UTC()
		cw1 := time.Unix(tr.at.Unix()+int64(hi), 0).UTC()
		for _, e := range exprs {
			wall, ok := wallTimeIn(j, e, cw0, cw1)
			if !ok {
				continue
			}
			seen[gap] = true
			out = append(out, dstFinding(j, tr, gap, wall, cw0, cw1))
			break
		}
	}
	return out
}

// wallTimeIn returns the first wall-clock time of the schedule in [lo, hi)
// (both zone-less, as UTC), for a timer only if the schedule fires at most
// four times that day (a fixed time, not a dense timer).
func wallTimeIn(j *Job, expr []string, lo, hi time.Time) (time.Time, bool) {
	var s schedule.Schedule
	var err error
	if j.Schedule != "" {
		s, err = cronSchedule(expr[0], time.UTC)
	} else {
		s, err = calendarSchedule(expr, time.UTC)
	}
	if err != nil {
		return time.Time{}, false
	}
	w := s.Next(lo.Add(-time.Second))
	if w.IsZero() || !w.Before(hi) {
		return time.Time{}, false
	}
	if j.Schedule == "" {
		day := time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC)
		if n := len(runsBetween(s, day, day.Add(24*time.Hour))); n > 4 {
			return time.Time{}, false
		}
	}
	return w, true
}

func runsBetween(s schedule.Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t := s.Next(from.Add(-time.Second)); !t.IsZero() && t.Before(to) && len(out) < 100; t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

func dstFinding(j *Job, tr transition, gap bool, wall, cw0, cw1 time.Time) Finding {
	zone := j.Zone
	clock := wall.Format("15:04")
	if wall.Second() != 0 {
		clock = wall.Format("15:04:05")
	}
	// The same wall-clock time on that date, as each scheduler reads it.
	cron, cerr := cronSchedule(fmt.Sprintf("%d %d %d %d *", wall.Minute(), wall.Hour(), wall.Day(), int(wall.Month())), zone)
	sysd, serr := calendarSchedule([]string{wall.Format("2006-01-02 15:04:05")}, zone)
	window := func(s schedule.Schedule, err error) []time.Time {
		if err != nil {
			return nil
		}
		return runsBetween(s, tr.at.Add(-4*time.Hour), tr.at.Add(4*time.Hour))
	}
	cronRuns, sysRuns := window(cron, cerr), window(sysd, serr)
	var what string
	if gap {
		what = fmt.Sprintf("%s does not exist in %s on %s (clocks jump from %s to %s)",
			clock, zone, wall.Format("2006-01-02"), cw0.Format("15:04"), cw1.Format("15:04"))
	} else {
		what = fmt.Sprintf("%s happens twice in %s on %s (clocks go back from %s to %s)",
			clock, zone, wall.Format("2006-01-02"), cw1.Format("15:04"), cw0.Format("15:04"))
	}
	var says string
	if j.Origin == "timer" {
		says = "systemd " + describeRuns(sysRuns, zone, false) + "; a cron line " + describeRuns(cronRuns, zone, true)
	} else {
		says = "cron " + describeRuns(cronRuns, zone, false) + "; a systemd timer " + describeRuns(sysRuns, zone, true)
	}
	return at(j, KindDST, Info, what+": "+says,
		fmt.Sprintf("move it out of %s-%s, or schedule it in UTC", cw0.Format("15:04"), cw1.Format("15:04")))
}

// describeRuns says what a scheduler does with the time that night: skips
// it, or runs it at the times given; would is for the other scheduler.
func describeRuns(runs []time.Time, zone *time.Location, would bool) string {
	skips, runsIt := "skips it", "runs it"
	if would {
		skips, runsIt = "would skip it", "would run it"
	}
	f := func(t time.Time) string { return t.In(zone).Format("15:04 MST") }
	switch len(runs) {
	case 0:
		return skips
	case 1:
		return runsIt + " once, at " + f(runs[0])
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = f(r)
	}
	return fmt.Sprintf("%s %d times, at %s", runsIt, len(runs), strings.Join(parts, " and "))
}
