package schedule

import (
	"errors"
	"time"
)

// This file computes OnCalendar elapses the way systemd 252 does
// (src/shared/calendarspec.c, find_next and tm_within_bounds), on top of a
// model of glibc's mktime(3) with tm_isdst -1, 0 or 1. Reading the
// expression's meaning is not enough around clock changes: systemd
// normalizes every candidate with mktime and acts on how it moved, which
// skips the rest of a day after a gap that a matching hour falls into
// (Europe/Dublin, Africa/Casablanca), runs a gap that crosses an hour
// boundary late (Pacific/Chatham: 04:00, not 03:45), and can loop until its
// safety valve of 1000 iterations gives up ("Failed to determine next
// elapse", America/Santiago): the timer then stops.

// sdItem is one element of a systemd CalendarComponent chain:
// start[..stop][/repeat]; stop is -1 and repeat 0 when not given.
type sdItem struct{ start, stop, repeat int }

// sdSpec is an OnCalendar expression as systemd holds it. A nil chain is
// "*".
type sdSpec struct {
	year, month, day, hour, minute, second []sdItem
	eom                                    bool   // day counts from the end of the month (~)
	dow                                    uint64 // weekday bits, Sunday = 0
	dst                                    int    // -1, or tm_isdst forced by a zone abbreviation suffix
	utc                                    bool
}

// Errors of find_next.
var (
	// errNoElapse is systemd's -ENOENT: "Next elapse: never".
	errNoElapse = errors.New("systemd computes no further elapse")
	// errCalendarLoop is systemd's -EDEADLK: "Failed to determine next
	// elapse"; the timer stops.
	errCalendarLoop = errors.New("systemd 252 fails to compute the next elapse (\"Failed to determine next elapse\": infinite loop in calendar calculation); the timer stops")
)

const (
	sdMaxYear       = maxYear // MAX_YEAR
	sdMaxIterations = 1000    // MAX_CALENDAR_ITERATIONS
	usecPerSec      = 1_000_000
)

// sdTm is a struct tm: fields may be out of range until normalized.
type sdTm struct {
	year, mon, mday, hour, min, sec int // year in full, mon 0..11
	isdst                           int
	wday                            int
}

// glibc is the state mktime keeps between calls: the offset of its last
// result, its first guess for the next one.
type glibc struct {
	loc   *time.Location
	guess int64
}

func (c *sdTm) civil() int64 {
	y := int64(c.year) + floorDiv(int64(c.mon), 12)
	m := int(floorMod(int64(c.mon), 12)) + 1
	return daysFromCivil(int(y), m, 1)*secPerDay + int64(c.mday-1)*secPerDay +
		int64(c.hour)*3600 + int64(c.min)*60 + int64(c.sec)
}

// localtime fills c from the instant u.
func (g *glibc) localtime(c *sdTm, u int64) {
	t := time.Unix(u, 0).In(g.loc)
	y, mo, d := t.Date()
	c.year, c.mon, c.mday = y, int(mo)-1, d
	c.hour, c.min, c.sec = t.Clock()
	c.isdst = 0
	if t.IsDST() {
		c.isdst = 1
	}
	c.wday = int(t.Weekday())
}

type zperiod struct {
	start, end int64
	off        int64
	dst        bool
}

func (g *glibc) periodOf(u int64) zperiod {
	p := periodAt(g.loc, u)
	t := time.Unix(u, 0).In(g.loc)
	return zperiod{start: p.start, end: p.end, off: p.off, dst: t.IsDST()}
}

// mktime normalizes c as glibc's mktime does and returns its instant; on
// failure c is unchanged.
func (g *glibc) mktime(c *sdTm) bool {
	_, ok := g.mktimeAt(c)
	return ok
}

func (g *glibc) mktimeAt(c *sdTm) (int64, bool) {
	u, ok := g.resolve(c.civil(), c.isdst)
	if !ok {
		return 0, false
	}
	g.localtime(c, u)
	_, off := time.Unix(u, 0).In(g.loc).Zone()
	g.guess = int64(off)
	return u, true
}

// resolve returns the instant glibc's mktime gives the civil time cs.
// Checked against glibc 2.36: a repeated time takes the offset of the
// previous result when it can (so, within one search, the first
// occurrence); a time in a gap with tm_isdst -1 is read with the offset
// that makes the result daylight saving time (Berlin 02:30 is 03:30 CEST,
// Dublin 01:30 is 00:30 GMT, whose tzdata flag is the DST one), forward
// when both sides have the same flag; an explicit tm_isdst reads the time
// with the offset of the nearest period of that kind.
func (g *glibc) resolve(cs int64, isdst int) (int64, bool) {
	ps := g.periodsAround(cs)
	cands, at := readings(ps, cs)
	if len(cands) == 0 {
		return g.resolveGap(cs, isdst, ps)
	}
	return g.resolveReading(cs, isdst, cands, at)
}

// periodsAround returns the periods around cs: offsets are within ±26
// hours.
func (g *glibc) periodsAround(cs int64) []zperiod {
	var ps []zperiod
	for u := cs - 27*3600; ; {
		p := g.periodOf(u)
		ps = append(ps, p)
		if p.end == noEnd || p.end > cs+27*3600 || len(ps) > 8 {
			break
		}
		u = p.end
	}
	return ps
}

// readings returns the periods of ps in which cs is a wall-clock time, and
// the instant cs is in each.
func readings(ps []zperiod, cs int64) (cands []zperiod, at []int64) {
	for _, p := range ps {
		u := cs - p.off
		if u >= p.start && (p.end == noEnd || u < p.end) {
			cands = append(cands, p)
			at = append(at, u)
		}
	}
	return cands, at
}

// resolveReading chooses among the readings of a time that exists.
func (g *glibc) resolveReading(cs int64, isdst int, cands []zperiod, at []int64) (int64, bool) {
	want := isdst > 0
	switch {
	case len(cands) == 1 && (isdst < 0 || cands[0].dst == want):
		return at[0], true
	case len(cands) >= 2 && isdst < 0:
		for i, p := range cands {
			if p.off == g.guess {
				return at[i], true
			}
		}
		// glibc converges from cs - guess.
		o := g.periodOf(cs - g.guess).off
		for i, p := range cands {
			if p.off == o {
				return at[i], true
			}
		}
		return at[0], true
	}
	for i, p := range cands {
		if p.dst == want {
			return at[i], true
		}
	}
	// No reading of cs has the requested flag: use the offset of the
	// nearest period that has it.
	if p, ok := g.nearestDST(at[0], want); ok {
		return cs - p.off, true
	}
	return at[0], true
}

// resolveGap reads a time in a gap.
func (g *glibc) resolveGap(cs int64, isdst int, ps []zperiod) (int64, bool) {
	// before is the period that ends in the gap, after the one that
	// follows.
	var before, after zperiod
	found := false
	for i := 0; i+1 < len(ps); i++ {
		if s := ps[i+1].start; cs-ps[i].off >= s && cs-ps[i+1].off < s {
			before, after, found = ps[i], ps[i+1], true
			break
		}
	}
	if !found {
		return 0, false
	}
	forward, backward := cs-before.off, cs-after.off
	if isdst < 0 {
		if before.dst != after.dst && before.dst {
			return backward, true
		}
		return forward, true
	}
	want := isdst > 0
	if before.dst != after.dst {
		if after.dst == want {
			return backward, true
		}
		return forward, true
	}
	if before.dst == want {
		return 0, false
	}
	if p, ok := g.nearestDST(after.start, want); ok {
		return cs - p.off, true
	}
	return 0, false
}

// nearestDST finds the period nearest u whose daylight saving flag is
// want, within about 17 years as glibc searches.
func (g *glibc) nearestDST(u int64, want bool) (zperiod, bool) {
	const limit = 536454000 / 2
	back, fwd := u, u
	for i := 0; i < 64; i++ {
		if fwd-u < limit {
			p := g.periodOf(fwd)
			if p.dst == want {
				return p, true
			}
			if p.end == noEnd {
				fwd = u + limit
			} else {
				fwd = p.end
			}
		}
		if u-back < limit {
			p := g.periodOf(back)
			if p.dst == want {
				return p, true
			}
			if p.start == noStart {
				back = u - limit
			} else {
				back = p.start - 1
			}
		}
	}
	return zperiod{}, false
}

// withinBounds is tm_within_bounds: 1 if c needs no normalization, 0 if it
// moved forward (c then holds the normalized time with the units below the
// first changed one reset), an error if it cannot be normalized or moved
// backward.
func (g *glibc) withinBounds(c *sdTm) (int, error) {
	if c.year > sdMaxYear {
		return 0, errNoElapse
	}
	t := *c
	if !g.mktime(&t) {
		return 0, errNoElapse
	}
	cmp := 0
	switch {
	case t.year != c.year:
		cmp, t.mon = sign(t.year-c.year), 0
	case t.mon != c.mon:
		cmp, t.mday = sign(t.mon-c.mon), 1
	case t.mday != c.mday:
		cmp, t.hour = sign(t.mday-c.mday), 0
	case t.hour != c.hour:
		cmp, t.min = sign(t.hour-c.hour), 0
	case t.min != c.min:
		cmp, t.sec = sign(t.min-c.min), 0
	default:
		cmp = sign(t.sec - c.sec)
	}
	if cmp < 0 {
		return 0, errCalendarLoop // EDEADLK: refuse to go backward
	}
	if cmp > 0 {
		*c = t
		return 0, nil
	}
	return 1, nil
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// match is find_matching_component: the earliest value >= val in the
// chain; changed reports whether it differs from val, ok false is ENOENT.
// Repetitions without an end go past the field's range (hour 24), as in
// systemd. scale multiplies values (microseconds for seconds).
func match(items []sdItem, val int, scale int, eomDays int) (int, bool, bool) {
	if items == nil {
		return val, false, true
	}
	d, set := 0, false
	for _, it := range items {
		start, stop := it.start*scale, it.stop
		if stop >= 0 {
			stop *= scale
		}
		if eomDays > 0 {
			start = eomDay(eomDays, it.start)
			stop = eomDay(eomDays, it.stop)
			if stop > 0 {
				start, stop = stop, start
			}
		}
		rep := it.repeat * scale
		switch {
		case start >= val:
			if !set || start < d {
				d, set = start, true
			}
		case rep > 0:
			k := start + rep*((val-start+rep-1)/rep)
			if (!set || k < d) && (stop < 0 || k <= stop) {
				d, set = k, true
			}
		}
	}
	if !set {
		return val, false, false
	}
	return d, d != val, true
}

// eomDay is find_end_of_month: the day that is the day-th last of a month
// of dim days, -1 if there is none.
func eomDay(dim, day int) int {
	if day < 1 || day > dim {
		return -1
	}
	return dim + 1 - day
}

func (s *sdSpec) weekdayOK(g *glibc, c *sdTm) bool {
	if s.dow == allDow {
		return true
	}
	t := *c
	if !g.mktime(&t) {
		return false
	}
	return s.dow>>uint(t.wday)&1 == 1
}

// findNext is systemd's find_next.
func (s *sdSpec) findNext(g *glibc, c sdTm, usec int) (sdTm, int, error) {
	for range sdMaxIterations {
		g.mktime(&c)
		c.isdst = s.dst

		if !c.matchField(s.year, sdYear, 0, &usec) {
			return c, 0, errNoElapse
		}
		if r, err := g.withinBounds(&c); err != nil || r == 0 {
			return c, 0, errNoElapse
		}

		ok := c.matchField(s.month, sdMon, 0, &usec)
		if !g.settle(&c, ok, sdYear, &usec) {
			continue
		}

		dim := 0
		if s.eom {
			dim = daysIn(c.year, c.mon+1)
		}
		ok = c.matchField(s.day, sdMday, dim, &usec)
		if !g.settle(&c, ok, sdMon, &usec) {
			continue
		}

		if !s.weekdayOK(g, &c) {
			c.carry(sdMday, &usec)
			continue
		}

		ok = c.matchField(s.hour, sdHour, 0, &usec)
		if !g.settle(&c, ok, sdMday, &usec) {
			continue
		}

		ok = c.matchField(s.minute, sdMin, 0, &usec)
		if !g.settle(&c, ok, sdHour, &usec) {
			continue
		}

		v, _, ok := match(s.second, c.sec*usecPerSec+usec, usecPerSec, 0)
		usec = v % usecPerSec
		c.sec = v / usecPerSec
		if !g.settle(&c, ok, sdMin, &usec) {
			continue
		}
		return c, usec, nil
	}
	return c, 0, errCalendarLoop
}

// sdField names a field of an sdTm, largest first.
type sdField int

const (
	sdYear sdField = iota
	sdMon
	sdMday
	sdHour
	sdMin
	sdSec
)

// field returns field f of c.
func (c *sdTm) field(f sdField) *int {
	switch f {
	case sdYear:
		return &c.year
	case sdMon:
		return &c.mon
	case sdMday:
		return &c.mday
	case sdHour:
		return &c.hour
	case sdMin:
		return &c.min
	}
	return &c.sec
}

// matchField is find_matching_component on field f of c, which resets the
// fields below f when f moves; false is ENOENT. eomDays is the month's
// length when days count from its end.
func (c *sdTm) matchField(items []sdItem, f sdField, eomDays int, usec *int) bool {
	p, off := c.field(f), 0
	if f == sdMon {
		off = 1 // the chain counts months from 1, a struct tm from 0
	}
	v, changed, ok := match(items, *p+off, 1, eomDays)
	*p = v - off
	if changed {
		c.clearBelow(f, usec)
	}
	return ok
}

// clearBelow resets the fields of c below f to their first value.
func (c *sdTm) clearBelow(f sdField, usec *int) {
	*usec = 0
	if f < sdSec {
		c.sec = 0
	}
	if f < sdMin {
		c.min = 0
	}
	if f < sdHour {
		c.hour = 0
	}
	if f < sdMday {
		c.mday = 1
	}
	if f < sdMon {
		c.mon = 0
	}
}

// carry moves c to the start of the next value of field f.
func (c *sdTm) carry(f sdField, usec *int) {
	*c.field(f)++
	c.clearBelow(f, usec)
}

// settle ends a step of find_next after the year's: a field that matched
// (ok) leaves c to tm_within_bounds; one that did not, or a c that cannot
// be normalized, carries into the field up. It reports whether the search
// goes on to the next field; false starts it again from the top.
func (g *glibc) settle(c *sdTm, ok bool, up sdField, usec *int) bool {
	r := 0
	var err error
	if ok {
		r, err = g.withinBounds(c)
	}
	if !ok || err != nil {
		c.carry(up, usec)
		return false
	}
	return r != 0
}

// sdNext is calendar_spec_next_usec: the first elapse after t, in whole
// seconds (our expressions have no fractions).
//
// find_next as written can return a time before its start: a time in a
// gap, adopted by tm_within_bounds with tm_isdst 1, is read back by mktime
// with the daylight offset and lands before the gap (Lord Howe: 02:00 with
// tm_isdst 1 is 01:30 standard time). systemd 252 as Debian builds it
// (252.38; traced with an LD_PRELOAD mktime logger) then searches again
// from one hour after that result with tm_isdst -1, which normalizes
// forward across the gap: Chatham's *:0/15 elapses at 04:00+13:45 after
// the gap 02:45 -> 03:45, not at 03:45. This retry is modelled on the
// traces, not on the source.
func (z *zoned) sdNext(t time.Time) (time.Time, error) {
	// Far from clock changes mktime changes nothing and find_next finds
	// the calendar's next match (unless a zone abbreviation forces
	// tm_isdst).
	if n := z.calNext(t); !n.IsZero() && z.sd.dst < 0 {
		p := periodAt(z.loc, t.Unix()-sdNear)
		if p.end == noEnd || p.end > n.Unix()+sdNear {
			return n, nil
		}
	}
	us := t.UnixMicro() + 1
	sec, usec := floorDiv(us, usecPerSec), int(floorMod(us, usecPerSec))
	g := &glibc{loc: z.loc}
	_, off := time.Unix(sec, 0).In(z.loc).Zone()
	g.guess = int64(off)
	var c sdTm
	g.localtime(&c, sec)
	n, err := z.sdFind(g, c, usec)
	isdst := -1
	for range sdRetries {
		if err != nil || n.UnixMicro() >= us {
			return n, err
		}
		g.localtime(&c, n.Unix())
		c.hour++
		c.isdst, isdst = isdst, c.isdst
		n, err = z.sdFind(g, c, 0)
	}
	if err != nil || n.UnixMicro() >= us {
		return n, err
	}
	return time.Time{}, errCalendarLoop
}

// sdNear: a clock change closer than this (more than any UTC offset change)
// to a search is followed step by step.
const sdNear = 27 * 3600

// sdRetries bounds the searches again after a result before the start:
// the first is read with tm_isdst -1, the next ones with the flag of the
// result before (Dublin, whose winter time carries the DST flag, needs two).
const sdRetries = 4

// sdFind runs find_next from c and converts its result.
func (z *zoned) sdFind(g *glibc, c sdTm, usec int) (time.Time, error) {
	c, usec, err := z.sd.findNext(g, c, usec)
	if err != nil {
		return time.Time{}, err
	}
	c.isdst = z.sd.dst
	u, ok := g.mktimeAt(&c)
	if !ok {
		return time.Time{}, errNoElapse
	}
	return time.Unix(u, int64(usec)*1000).In(z.loc), nil
}
