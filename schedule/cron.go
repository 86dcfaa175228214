package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronField describes one of the five fields of a cron expression.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i
}

var (
	cronMinute = cronField{name: "minute", min: 0, max: 59}
	cronHour   = cronField{name: "hour", min: 0, max: 23}
	cronDom    = cronField{name: "day-of-month", min: 1, max: 31}
	cronMonth  = cronField{name: "month", min: 1, max: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	cronDow = cronField{name: "day-of-week", min: 0, max: 7,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}}
)

// cronMacros are cronie's @-shortcuts (entry.c). @hourly is a wildcard job
// there (HR_STAR), the others are fixed-time jobs.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCron parses a cron expression as cronie and Debian's cron read the
// first five fields of a crontab line: minute (0-59), hour (0-23), day of
// month (1-31), month (1-12 or JAN-DEC), day of week (0-7 or SUN-SAT, 0 and
// 7 are Sunday), each a list of values, ranges a-b and steps */n or a-b/n;
// or one of @yearly (@annually), @monthly, @weekly, @daily (@midnight),
// @hourly. When both day fields are restricted (neither starts with '*'), a
// day matches if either matches, as in cron. A leading "CRON_TZ=Zone/Name"
// selects the time zone and wins over loc (nil loc means time.Local).
//
// Runs follow cron's daylight saving rules (see dstRule): a fixed-time job
// (minute and hour fields without '*') whose time is skipped by a jump
// forward of up to 3 hours runs at the first minute after the jump, and runs
// only once in a repeated hour; a job whose minute or hour field starts
// with '*' runs on every wall-clock match of the new clock.
func ParseCron(expr string, loc *time.Location) (Schedule, error) {
	z, err := parseCron(expr, loc)
	if err != nil {
		return nil, err
	}
	return z, nil
}

func parseCron(expr string, loc *time.Location) (*zoned, error) {
	if loc == nil {
		loc = time.Local
	}
	fields := strings.Fields(expr)
	if len(fields) > 0 && strings.HasPrefix(fields[0], "CRON_TZ=") {
		name := strings.TrimPrefix(fields[0], "CRON_TZ=")
		l, err := loadZone(name)
		if err != nil {
			return nil, fmt.Errorf("CRON_TZ: %w", err)
		}
		loc = l
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return nil, errors.New("empty cron expression")
	}
	if strings.HasPrefix(fields[0], "@") {
		if len(fields) > 1 {
			return nil, fmt.Errorf("%s takes no fields, got %d more", fields[0], len(fields)-1)
		}
		m := strings.ToLower(fields[0])
		if m == "@reboot" {
			return nil, errors.New("@reboot has no schedule to watch; use every: instead")
		}
		five, ok := cronMacros[m]
		if !ok {
			return nil, fmt.Errorf("unknown shortcut %s (want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)", fields[0])
		}
		fields = strings.Fields(five)
	}
	if len(fields) != 5 {
		return nil, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	z := &zoned{loc: loc, expr: strings.Join(strings.Fields(expr), " "), rule: ruleCronFixed}
	c := &z.cal
	c.sec = 1
	var err error
	specs := []struct {
		f   cronField
		dst *uint64
	}{{cronMinute, &c.min}, {cronHour, &c.hour}, {cronDom, &c.dom}, {cronMonth, &c.month}, {cronDow, &c.dow}}
	for i, s := range specs {
		if *s.dst, err = parseCronField(s.f, fields[i]); err != nil {
			return nil, err
		}
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1
	}
	star := func(i int) bool { return strings.HasPrefix(fields[i], "*") }
	if star(0) || star(1) {
		z.rule = ruleCronWild
	}
	// entry.c: DOM_STAR / DOW_STAR; the shortcuts @yearly, @monthly and
	// @weekly set DOW_STAR, which our expansions get from their '*'.
	c.dayOr = !star(2) && !star(4)
	if !c.fires(2000, 2400) {
		return nil, errors.New("never fires: no date matches its day-of-month, month and day-of-week")
	}
	return z, nil
}

func parseCronField(f cronField, s string) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			return 0, fmt.Errorf("%s: empty list element in %q", f.name, s)
		}
		rng, stepStr, hasStep := strings.Cut(part, "/")
		var lo, hi int
		if rng == "*" {
			lo, hi = f.min, f.max
		} else {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(f, a); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = cronValue(f, b); err != nil {
					return 0, err
				}
				if lo > hi {
					return 0, fmt.Errorf("%s: range %q starts after it ends", f.name, rng)
				}
			} else if hasStep {
				return 0, fmt.Errorf("%s: step in %q needs a range or * before it (e.g. %d-%d/%s)", f.name, part, lo, f.max, stepStr)
			}
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n < 1 || !isDigits(stepStr) {
				return 0, fmt.Errorf("%s: bad step %q in %q", f.name, stepStr, part)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

func cronValue(f cronField, s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("%s: missing value", f.name)
	}
	if isDigits(s) {
		if len(s) > 3 {
			return 0, fmt.Errorf("%s: %s out of range %d-%d", f.name, s, f.min, f.max)
		}
		v, _ := strconv.Atoi(s)
		if v < f.min || v > f.max {
			return 0, fmt.Errorf("%s: %d out of range %d-%d", f.name, v, f.min, f.max)
		}
		return v, nil
	}
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	if f.names != nil {
		return 0, fmt.Errorf("%s: unknown value %q (want %d-%d or a name like %s)", f.name, s, f.min, f.max, strings.ToUpper(f.names[1]))
	}
	return 0, fmt.Errorf("%s: unknown value %q (want %d-%d)", f.name, s, f.min, f.max)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// loadZone loads an IANA zone by name; "Local" and "" are not zone names.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return l, nil
}
