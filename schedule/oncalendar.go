package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseOnCalendar parses systemd OnCalendar expressions (systemd.time(7),
// as systemd 252 reads them) into one schedule that fires at the union of
// their times. Each expression is
//
//	[Weekdays] [[Year-]Month-Day] [Hour:Minute[:Second]] [Zone]
//
// where weekdays are a list of names and name..name ranges (Mon..Fri), and
// every number field is "*" or a list of values, ranges a..b and
// repetitions a/n or a..b/n; "~" before the day counts days from the end of
// the month (~1 is the last day). Shorthands minutely, hourly, daily,
// weekly, monthly, quarterly, semiannually, yearly (and their systemd
// aliases) and @UNIXSECONDS are accepted. A trailing UTC or IANA zone name
// wins over loc (nil loc means time.Local). Fractional seconds are rejected.
//
// Runs follow systemd's daylight saving behaviour (see ruleSystemd): a
// wall-clock time skipped by a jump forward is not run at all, and a
// wall-clock time that occurs twice is run once, at its first occurrence.
func ParseOnCalendar(exprs []string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.Local
	}
	if len(exprs) == 0 {
		return nil, errors.New("no OnCalendar expression")
	}
	u := &union{loc: loc}
	for i, e := range exprs {
		z, err := parseOnCalendar(e, loc)
		if err != nil {
			if len(exprs) > 1 {
				return nil, fmt.Errorf("[%d] %q: %w", i, e, err)
			}
			return nil, fmt.Errorf("%q: %w", e, err)
		}
		u.parts = append(u.parts, z)
	}
	u.loc = u.showIn(loc)
	return u, nil
}

var calendarShorthands = map[string]string{
	"minutely":      "*-*-* *:*:00",
	"hourly":        "*-*-* *:00:00",
	"daily":         "*-*-* 00:00:00",
	"monthly":       "*-*-01 00:00:00",
	"weekly":        "Mon *-*-* 00:00:00",
	"yearly":        "*-01-01 00:00:00",
	"annually":      "*-01-01 00:00:00",
	"anually":       "*-01-01 00:00:00",
	"quarterly":     "*-01,04,07,10-01 00:00:00",
	"semiannually":  "*-01,07-01 00:00:00",
	"semi-annually": "*-01,07-01 00:00:00",
	"biannually":    "*-01,07-01 00:00:00",
	"bi-annually":   "*-01,07-01 00:00:00",
}

var weekdayNames = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

func parseOnCalendar(expr string, loc *time.Location) (*zoned, error) {
	s := expr
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty expression")
	}
	if s != strings.TrimSpace(s) {
		return nil, errors.New("leading or trailing white space (systemd rejects it)")
	}
	sd := &sdSpec{dst: -1}
	s, loc, named, err := zoneSuffix(s, loc, sd)
	if err != nil {
		return nil, err
	}
	z := &zoned{loc: loc, rule: ruleSystemd, expr: expr, named: named}
	if sh, ok := calendarShorthands[strings.ToLower(s)]; ok {
		s = sh
	}
	if strings.HasPrefix(s, "@") {
		return z, parseTimestamp(z, s[1:])
	}
	c := &z.cal
	c.dow = allDow
	tokens := strings.Fields(s)
	c.years = fullYears()
	if len(tokens) > 0 && isLetter(tokens[0][0]) {
		dow, err := parseWeekdays(tokens[0])
		if err != nil {
			return nil, err
		}
		c.dow = dow
		tokens = tokens[1:]
	}
	date, clock, err := dateAndClock(tokens)
	if err != nil {
		return nil, err
	}
	if err := parseDate(c, sd, date); err != nil {
		return nil, err
	}
	if err := parseClock(c, sd, clock); err != nil {
		return nil, err
	}
	sd.dow = c.dow
	if !c.fires(minYear, maxYear+1) {
		return nil, errors.New("never fires: no date matches")
	}
	if !sd.utc && loc != time.UTC {
		z.sd = sd
	}
	return z, nil
}

// zoneSuffix reads the zone an expression may end in, and returns the
// expression without it and the zone it is read in; named says the zone
// was named.
func zoneSuffix(s string, loc *time.Location, sd *sdSpec) (rest string, in *time.Location, named bool, err error) {
	if len(s) > 4 && strings.EqualFold(s[len(s)-4:], " utc") {
		sd.utc = true
		return strings.TrimSpace(s[:len(s)-4]), time.UTC, true, nil
	}
	if dst, rest, ok := localAbbreviation(s, loc); ok {
		// systemd first compares the end with tzname[0] and tzname[1]
		// of its own zone: such an expression is read on the local
		// clock with tm_isdst forced.
		sd.dst = dst
		return rest, loc, false, nil
	}
	if i := strings.LastIndexAny(s, " \t"); i >= 0 && isLetter(s[i+1]) {
		l, err := loadZone(s[i+1:])
		if err != nil {
			return "", nil, false, err
		}
		return strings.TrimSpace(s[:i]), l, true, nil
	}
	return s, loc, false, nil
}

// dateAndClock returns the date and the time among the tokens after the
// weekdays, with their defaults.
func dateAndClock(tokens []string) (date, clock string, err error) {
	date, clock = "*-*-*", "00:00:00"
	haveDate, haveTime := false, false
	for _, tok := range tokens {
		switch {
		case !haveDate && !haveTime && !strings.Contains(tok, ":"):
			date, haveDate = tok, true
		case !haveTime:
			clock, haveTime = tok, true
		default:
			return "", "", fmt.Errorf("unexpected %q after the time", tok)
		}
	}
	return date, clock, nil
}

// localAbbreviation reports whether expr ends in " " and an abbreviation
// of loc's standard (dst 0) or daylight saving time (dst 1), as systemd
// compares it with tzname[0] and tzname[1], and returns the rest.
func localAbbreviation(expr string, loc *time.Location) (dst int, rest string, ok bool) {
	std, day := zoneAbbreviations(loc)
	for j, name := range []string{std, day} {
		if name == "" || !strings.HasSuffix(expr, " "+name) || len(expr) == len(name)+1 {
			continue
		}
		return j, strings.TrimSpace(expr[:len(expr)-len(name)-1]), true
	}
	return 0, "", false
}

// zoneAbbreviations returns what glibc's tzset puts in tzname[0] and
// tzname[1] for loc: the names of its standard and daylight saving time in
// the current rules (this year's, or the last ones the zone had).
func zoneAbbreviations(loc *time.Location) (std, dst string) {
	if loc == nil || loc == time.UTC {
		return "UTC", ""
	}
	y := time.Now().Year()
	for _, m := range []time.Month{1, 7} {
		t := time.Date(y, m, 15, 12, 0, 0, 0, loc)
		name, _ := t.Zone()
		if t.IsDST() {
			dst = name
		} else {
			std = name
		}
	}
	return std, dst
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func parseTimestamp(z *zoned, digits string) error {
	if !isDigits(digits) || len(digits) > 12 {
		return fmt.Errorf("bad timestamp @%s: want @ and seconds since 1970", digits)
	}
	sec, _ := strconv.ParseInt(digits, 10, 64)
	y, mo, d, h, mi, s := splitCivil(sec)
	if y > maxYear {
		return fmt.Errorf("timestamp @%s is after %d", digits, maxYear)
	}
	z.loc = time.UTC
	z.cal = calendar{sec: 1 << uint(s), min: 1 << uint(mi), hour: 1 << uint(h),
		month: 1 << uint(mo), dom: 1 << uint(d), dow: allDow, years: &yearSet{}}
	z.cal.years.add(y)
	return nil
}

// parseWeekdays reads "Mon,Wed..Fri" (also "Mon-Fri", full names, any case,
// a trailing comma); weekdays run Monday..Sunday.
func parseWeekdays(s string) (uint64, error) {
	var dow uint64
	items := strings.Split(s, ",")
	if len(items) > 1 && items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	for _, it := range items {
		a, b, isRange := strings.Cut(it, "..")
		if !isRange {
			a, b, isRange = strings.Cut(it, "-")
		}
		lo, err := weekdayNumber(a)
		if err != nil {
			return 0, err
		}
		hi := lo
		if isRange {
			if hi, err = weekdayNumber(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("weekday range %q must run forward from Monday to Sunday", it)
			}
		}
		for d := lo; d <= hi; d++ {
			dow |= 1 << uint((d+1)%7) // Monday=0 here, Sunday=0 in calendar
		}
	}
	return dow, nil
}

func weekdayNumber(s string) (int, error) {
	l := strings.ToLower(s)
	for i, n := range weekdayNames {
		if l == n || l == n[:3] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown weekday %q (want Mon, Tue, ... or Monday, ...)", s)
}

func parseDate(c *calendar, sd *sdSpec, date string) error {
	var seps []int
	for i := 0; i < len(date); i++ {
		if date[i] == '-' || date[i] == '~' {
			seps = append(seps, i)
		}
	}
	if len(seps) < 1 || len(seps) > 2 {
		return fmt.Errorf("bad date %q: want [year-]month-day", date)
	}
	for _, i := range seps[:len(seps)-1] {
		if date[i] == '~' {
			return fmt.Errorf("bad date %q: ~ may only come before the day", date)
		}
	}
	eom := date[seps[len(seps)-1]] == '~'
	var year, month, day string
	if len(seps) == 1 {
		year, month, day = "*", date[:seps[0]], date[seps[0]+1:]
	} else {
		year, month, day = date[:seps[0]], date[seps[0]+1:seps[1]], date[seps[1]+1:]
	}

	ys, yi, err := parseChain(year, "year", minYear, maxYear, false, false, true)
	sd.year = yi
	if err != nil {
		return err
	}
	if ys != nil {
		c.years = &yearSet{}
		for _, y := range ys {
			c.years.add(y)
		}
	}
	if c.month, sd.month, err = chainBits(month, "month", 1, 12); err != nil {
		return err
	}
	if !eom {
		c.dom, sd.day, err = chainBits(day, "day", 1, 31)
		return err
	}
	sd.eom = true
	ks, di, err := parseChain(day, "day", 1, 31, true, false, false)
	sd.day = di
	if err != nil {
		return err
	}
	if ks == nil { // "~*" is every day
		c.dom = 1<<32 - 2
		return nil
	}
	c.domByLen = &[4]uint64{}
	for i := range c.domByLen {
		dim := 28 + i
		for _, k := range ks {
			c.domByLen[i] |= 1 << uint(dim-k+1)
		}
	}
	return nil
}

func parseClock(c *calendar, sd *sdSpec, clock string) error {
	parts := strings.Split(clock, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("bad time %q: want hour:minute[:second]", clock)
	}
	var err error
	if c.hour, sd.hour, err = chainBits(parts[0], "hour", 0, 23); err != nil {
		return err
	}
	if c.min, sd.minute, err = chainBits(parts[1], "minute", 0, 59); err != nil {
		return err
	}
	if len(parts) == 2 {
		c.sec = 1
		sd.second = []sdItem{{start: 0, stop: -1}}
		return nil
	}
	ss, si, err := parseChain(parts[2], "second", 0, 59, false, true, false)
	sd.second = si
	if err != nil {
		return err
	}
	c.sec = bitsOf(ss, 0, 59)
	return err
}

func chainBits(s, what string, from, to int) (uint64, []sdItem, error) {
	vs, items, err := parseChain(s, what, from, to, false, false, false)
	if err != nil {
		return 0, nil, err
	}
	return bitsOf(vs, from, to), items, nil
}

// bitsOf turns values into a bit set; nil ("*") is every value.
func bitsOf(vs []int, from, to int) uint64 {
	var b uint64
	if vs == nil {
		for v := from; v <= to; v++ {
			b |= 1 << uint(v)
		}
		return b
	}
	for _, v := range vs {
		b |= 1 << uint(v)
	}
	return b
}

// parseChain reads "*" (nil) or a list of start[..stop][/repeat], checked
// as systemd's calendar_spec_valid() does. With eom the values are k-th
// last days (1 = last) and at most 28; a repetition without stop counts
// down towards the end of the month.
func parseChain(s, what string, from, to int, eom, sec, year bool) ([]int, []sdItem, error) {
	if s == "*" {
		return nil, nil, nil
	}
	if s == "" {
		return nil, nil, fmt.Errorf("bad %s: empty", what)
	}
	max := to
	if eom {
		max = to - 3
	}
	var out []int
	var items []sdItem
	for _, part := range strings.Split(s, ",") {
		it, err := parseItem(part, what, sec, year)
		if err != nil {
			return nil, nil, err
		}
		if it.start < from || it.start > max {
			return nil, nil, fmt.Errorf("bad %s %q: %d out of range %d-%d", what, part, it.start, from, max)
		}
		items = append(items, it)
		if out, err = expandItem(out, it, part, what, from, to, max, eom); err != nil {
			return nil, nil, err
		}
	}
	return out, items, nil
}

// parseItem reads one start[..stop][/repeat] of a chain; a range without
// a repetition repeats every 1.
func parseItem(part, what string, sec, year bool) (sdItem, error) {
	p := part
	num := func() (int, error) {
		i := 0
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, fmt.Errorf("bad %s %q: want a number", what, part)
		}
		v, _ := strconv.Atoi(p[:i])
		p = p[i:]
		if sec && len(p) > 0 && p[0] == '.' && !strings.HasPrefix(p, "..") {
			return 0, fmt.Errorf("bad %s %q: fractional seconds are not supported", what, part)
		}
		return v, nil
	}
	fixYear := func(v int) int {
		if year && v < 70 {
			return v + 2000
		}
		if year && v < 100 {
			return v + 1900
		}
		return v
	}
	it := sdItem{stop: -1}
	var err error
	if it.start, err = num(); err != nil {
		return it, err
	}
	it.start = fixYear(it.start)
	if strings.HasPrefix(p, "..") {
		p = p[2:]
		if it.stop, err = num(); err != nil {
			return it, err
		}
		it.stop = fixYear(it.stop)
		it.repeat = 1
	}
	if strings.HasPrefix(p, "/") {
		p = p[1:]
		if it.repeat, err = num(); err != nil {
			return it, err
		}
		if it.repeat == 0 {
			return it, fmt.Errorf("bad %s %q: repetition must not be 0", what, part)
		}
	}
	if p != "" {
		return it, fmt.Errorf("bad %s %q: unexpected %q", what, part, p)
	}
	return it, nil
}

// expandItem checks the rest of an item whose start is in range, and
// appends the values it stands for to out.
func expandItem(out []int, it sdItem, part, what string, from, to, max int, eom bool) ([]int, error) {
	start, stop, repeat := it.start, it.stop, it.repeat
	switch {
	case stop >= 0:
		if stop < from || stop > max {
			return nil, fmt.Errorf("bad %s %q: %d out of range %d-%d", what, part, stop, from, max)
		}
		if stop < start {
			return nil, fmt.Errorf("bad %s %q: range ends before it starts", what, part)
		}
		for v := start; v <= stop; v += repeat {
			out = append(out, v)
		}
	case repeat > 0 && eom:
		if start-repeat < from {
			return nil, fmt.Errorf("bad %s %q: repetition leaves the month", what, part)
		}
		for v := start; v >= from; v -= repeat {
			out = append(out, v)
		}
	case repeat > 0:
		if start+repeat > to {
			return nil, fmt.Errorf("bad %s %q: repetition never repeats before %d", what, part, to)
		}
		for v := start; v <= to; v += repeat {
			out = append(out, v)
		}
	default:
		out = append(out, start)
	}
	return out, nil
}
