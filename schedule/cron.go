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

// Flavour is the cron daemon that reads a job's crontab line.
type Flavour string

const (
	// Debian is Debian's cron 3.0pl1 (Debian, Ubuntu and their
	// derivatives; version 3.0pl1-162 checked): CRON_TZ is an ordinary
	// environment variable there, times are read in cron's own zone.
	Debian Flavour = "debian"
	// Cronie is cronie (Fedora, RHEL, Arch, SUSE): CRON_TZ selects the
	// zone a line is read in.
	Cronie Flavour = "cronie"
)

// ParseFlavour returns the flavour of a job's cron field; "" is Debian.
func ParseFlavour(s string) (Flavour, error) {
	switch Flavour(s) {
	case "", Debian:
		return Debian, nil
	case Cronie:
		return Cronie, nil
	}
	return "", fmt.Errorf("unknown cron flavour %q (want debian or cronie)", s)
}

// cronMacros are cron's @-shortcuts (entry.c), matched case-sensitively as
// cron does. @hourly is a wildcard job there (HR_STAR), the others are
// fixed-time jobs.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCron parses the time fields of a crontab line exactly as Debian's
// cron (3.0pl1-162) accepts and reads them: minute (0-59), hour (0-23), day
// of month (1-31), month (1-12 or JAN-DEC), day of week (0-7 or SUN-SAT, 0
// and 7 are Sunday), each a list of values, ranges a-b and steps */n or
// a-b/n; or one of @yearly (@annually), @monthly, @weekly, @daily
// (@midnight), @hourly, in lower case. When both day fields are restricted
// (neither starts with '*'), a day matches if either matches, as in cron.
//
// cron's reading has surprises, kept here because they are what runs: a
// range that runs backwards (5-3, 6-0, feb-jan) matches nothing; a list
// ends at the first character after an element that is not a comma, and
// the rest of the field is ignored (*/5-10 is */5, 1-5-7,30 is 1-5, **/5
// is *); leading zeros are allowed (0059). CronWarnings reports each.
//
// A leading "CRON_TZ=Zone/Name" selects the zone for the Cronie flavour
// and wins over loc (nil loc means time.Local); Debian's cron ignores it.
// A line that never fires (0 0 30 2 *) is accepted by cron but rejected
// here: no run of it can be expected.
//
// Runs follow cron's daylight saving rules (see dstRule): a fixed-time job
// (minute and hour fields without a leading '*') whose time is skipped by a
// jump forward of up to 3 hours runs at the first minute after the jump,
// once for each time skipped (Runs), and runs only once in a repeated hour;
// a job whose minute or hour field starts with '*' runs on every
// wall-clock match of the new clock.
func ParseCron(expr string, loc *time.Location, flavour Flavour) (Schedule, error) {
	z, _, err := parseCron(expr, loc, flavour)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// CronWarnings returns what is surprising about how cron reads expr: a
// CRON_TZ that the flavour ignores, parts of a field cron ignores, ranges
// that match nothing. It returns nothing for expressions ParseCron rejects.
func CronWarnings(expr string, loc *time.Location, flavour Flavour) []string {
	_, warns, err := parseCron(expr, loc, flavour)
	if err != nil {
		return nil
	}
	return warns
}

func parseCron(expr string, loc *time.Location, flavour Flavour) (*zoned, []string, error) {
	if loc == nil {
		loc = time.Local
	}
	if flavour == "" {
		flavour = Debian
	}
	fields, loc, warns, err := cronTZ(strings.Fields(expr), loc, flavour)
	if err != nil {
		return nil, nil, err
	}
	if fields, err = fiveFields(fields); err != nil {
		return nil, nil, err
	}
	z := &zoned{loc: loc, expr: strings.Join(strings.Fields(expr), " "), rule: ruleCronFixed}
	c := &z.cal
	c.sec = 1
	specs := []struct {
		f   cronField
		dst *uint64
	}{{cronMinute, &c.min}, {cronHour, &c.hour}, {cronDom, &c.dom}, {cronMonth, &c.month}, {cronDow, &c.dow}}
	for i, s := range specs {
		bits, w, err := parseCronField(s.f, fields[i])
		if err != nil {
			return nil, nil, err
		}
		*s.dst = bits
		warns = append(warns, w...)
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
	for i, bits := range []uint64{c.min, c.hour} {
		if bits == 0 {
			return nil, nil, fmt.Errorf("never fires: its %s field matches nothing (cron accepts the line and never runs it)", specs[i].f.name)
		}
	}
	if !c.fires(2000, 2400) {
		return nil, nil, errors.New("never fires: no date matches its day-of-month, month and day-of-week (cron accepts the line and never runs it)")
	}
	return z, warns, nil
}

// cronTZ reads a leading CRON_TZ=: it returns the fields after it, the zone
// the line is read in, and a warning when the flavour ignores it.
func cronTZ(fields []string, loc *time.Location, flavour Flavour) ([]string, *time.Location, []string, error) {
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "CRON_TZ=") {
		return fields, loc, nil, nil
	}
	name := strings.TrimPrefix(fields[0], "CRON_TZ=")
	if flavour != Cronie {
		return fields[1:], loc, []string{fmt.Sprintf("CRON_TZ=%s is ignored by Debian's cron (cron: %s): runs are expected in %s, cron's own zone; set cron: cronie if the host runs cronie", name, flavour, loc)}, nil
	}
	l, err := loadZone(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("CRON_TZ: %w", err)
	}
	return fields[1:], l, nil, nil
}

// fiveFields returns the five time fields of a line, a shortcut expanded.
func fiveFields(fields []string) ([]string, error) {
	if len(fields) == 0 {
		return nil, errors.New("empty cron expression")
	}
	if strings.HasPrefix(fields[0], "@") {
		if len(fields) > 1 {
			return nil, fmt.Errorf("%s takes no fields, got %d more", fields[0], len(fields)-1)
		}
		if fields[0] == "@reboot" {
			return nil, errors.New("@reboot has no schedule to watch; use every: instead")
		}
		five, ok := cronMacros[fields[0]]
		if !ok {
			return nil, fmt.Errorf("unknown shortcut %s (cron knows @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly, in lower case)", fields[0])
		}
		fields = strings.Fields(five)
	}
	if len(fields) != 5 {
		return nil, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	return fields, nil
}

// cronScanner reads one field as entry.c's get_list, get_range and
// get_number do.
type cronScanner struct {
	f   cronField
	s   string
	i   int
	err error
}

func (sc *cronScanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *cronScanner) fail(format string, args ...any) {
	if sc.err == nil {
		sc.err = fmt.Errorf("%s: "+format, append([]any{sc.f.name}, args...)...)
	}
}

// terminates: what may follow a number or name: get_number rejects a
// letter or digit there, anything else ends the value.
func terminates(b byte) bool { return !isLetter(b) && (b < '0' || b > '9') }

// number reads a value: digits (any number of them) or a three-letter
// name, in range.
func (sc *cronScanner) number(names []string) int {
	start := sc.i
	for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		sc.i++
	}
	if sc.i > start {
		if !terminates(sc.peek()) {
			sc.fail("unexpected %q after %s in %q", sc.s[sc.i:sc.i+1], sc.s[start:sc.i], sc.s)
			return 0
		}
		digits := strings.TrimLeft(sc.s[start:sc.i], "0")
		if len(digits) > 9 {
			sc.fail("%s out of range %d-%d", sc.s[start:sc.i], sc.f.min, sc.f.max)
			return 0
		}
		v, _ := strconv.Atoi("0" + digits)
		return v
	}
	for sc.i < len(sc.s) && isLetter(sc.s[sc.i]) {
		sc.i++
	}
	word := sc.s[start:sc.i]
	if names != nil && word != "" && terminates(sc.peek()) {
		for i, n := range names {
			if strings.EqualFold(word, n) {
				return sc.f.min + i
			}
		}
	}
	switch {
	case sc.i == start && sc.i < len(sc.s):
		word = sc.s[sc.i:]
	case sc.i == start:
		sc.fail("missing value in %q", sc.s)
		return 0
	}
	if sc.f.names != nil {
		sc.fail("unknown value %q (want %d-%d or a name like %s)", word, sc.f.min, sc.f.max, strings.ToUpper(sc.f.names[1]))
	} else {
		sc.fail("unknown value %q (want %d-%d)", word, sc.f.min, sc.f.max)
	}
	return 0
}

func (sc *cronScanner) value() int {
	v := sc.number(sc.f.names)
	if sc.err == nil && (v < sc.f.min || v > sc.f.max) {
		sc.fail("%d out of range %d-%d", v, sc.f.min, sc.f.max)
	}
	return v
}

// parseCronField returns the values of one field and warnings about what
// cron reads surprisingly in it.
func parseCronField(f cronField, s string) (uint64, []string, error) {
	sc := &cronScanner{f: f, s: s}
	var bits uint64
	var warns []string
	for {
		elem := sc.i
		lo, hi, step := f.min, f.max, 1
		if sc.peek() == '*' {
			sc.i++
		} else {
			lo = sc.value()
			if sc.err != nil {
				return 0, nil, sc.err
			}
			switch sc.peek() {
			case '/':
				return 0, nil, fmt.Errorf("%s: step in %q needs a range or * before it (e.g. %d-%d%s)", f.name, s, lo, f.max, s[sc.i:])
			case '-':
				sc.i++
				hi = sc.value()
			default:
				hi = lo
			}
		}
		if sc.err == nil && sc.peek() == '/' {
			sc.i++
			at := sc.i
			step = sc.number(nil)
			if sc.err == nil && step < 1 {
				sc.fail("bad step %q in %q", s[at:sc.i], s)
			}
			if sc.err != nil {
				return 0, nil, fmt.Errorf("%s: bad step %q in %q", f.name, s[at:], s)
			}
		}
		if sc.err != nil {
			return 0, nil, sc.err
		}
		if lo > hi {
			warns = append(warns, fmt.Sprintf("%s: range %q runs backwards: cron accepts it and it matches nothing", f.name, s[elem:sc.i]))
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
		if sc.peek() != ',' {
			break
		}
		sc.i++
		if sc.peek() == 0 || sc.peek() == ',' {
			return 0, nil, fmt.Errorf("%s: empty list element in %q", f.name, s)
		}
	}
	if sc.i < len(s) {
		warns = append(warns, fmt.Sprintf("%s: cron ignores %q at the end of %q and reads %q", f.name, s[sc.i:], s, s[:sc.i]))
	}
	return bits, warns, nil
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
