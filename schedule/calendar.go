package schedule

import "math/bits"

// calendar is a set of wall-clock ("civil") times at one-second resolution,
// independent of any time zone. Both the cron and the OnCalendar parser
// compile to it; zoned (zoned.go) maps it onto instants.
//
// Civil times are handled as int64 seconds since 1970-01-01 00:00:00 of the
// proleptic Gregorian calendar, as if the wall clock were UTC.
type calendar struct {
	sec, min, hour uint64 // bits 0..59, 0..59, 0..23
	month          uint64 // bits 1..12
	dom            uint64 // bits 1..31
	dow            uint64 // bits 0..6, 0 = Sunday
	// domByLen, when set, replaces dom: day bits for months of 28, 29, 30
	// and 31 days (OnCalendar's "~", days counted from the end of the month).
	domByLen *[4]uint64
	// dayOr: a day matches if its day of month OR its weekday matches
	// (cron, when neither field starts with '*'); otherwise both must.
	dayOr bool
	// years, when set, restricts the years (OnCalendar: 1970..2199).
	years *yearSet
}

const (
	allDow     = 1<<7 - 1
	secPerDay  = 86400
	minYear    = 1970 // OnCalendar's year range, as in systemd
	maxYear    = 2199
	yearsWords = (maxYear - minYear + 64) / 64
)

// yearSet is a set of years within minYear..maxYear.
type yearSet [yearsWords]uint64

func (s *yearSet) add(y int) { s[(y-minYear)/64] |= 1 << uint((y-minYear)%64) }

func (s *yearSet) has(y int) bool {
	return y >= minYear && y <= maxYear && s[(y-minYear)/64]>>uint((y-minYear)%64)&1 == 1
}

// next returns the first year >= y in the set.
func (s *yearSet) next(y int) (int, bool) {
	if y < minYear {
		y = minYear
	}
	for ; y <= maxYear; y++ {
		if s.has(y) {
			return y, true
		}
	}
	return 0, false
}

// prev returns the last year <= y in the set.
func (s *yearSet) prev(y int) (int, bool) {
	if y > maxYear {
		y = maxYear
	}
	for ; y >= minYear; y-- {
		if s.has(y) {
			return y, true
		}
	}
	return 0, false
}

// nextBit returns the lowest set bit >= x, or -1.
func nextBit(mask uint64, x int) int {
	if x > 63 {
		return -1
	}
	if x > 0 {
		mask &^= 1<<uint(x) - 1
	}
	if mask == 0 {
		return -1
	}
	return bits.TrailingZeros64(mask)
}

// prevBit returns the highest set bit <= x, or -1.
func prevBit(mask uint64, x int) int {
	if x < 0 {
		return -1
	}
	if x < 63 {
		mask &= 2<<uint(x) - 1
	}
	if mask == 0 {
		return -1
	}
	return 63 - bits.LeadingZeros64(mask)
}

func (c *calendar) dayOK(y, mo, d, dim int) bool {
	dom := c.dom
	if c.domByLen != nil {
		dom = c.domByLen[dim-28]
	}
	domOK := dom>>uint(d)&1 == 1
	if c.dow == allDow && !c.dayOr {
		return domOK
	}
	dowOK := c.dow>>uint(weekday(daysFromCivil(y, mo, d)))&1 == 1
	if c.dayOr {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// civilTime is a civil time as a search moves it: a field may be one past
// its range until the search carries it into the field above.
type civilTime struct{ y, mo, d, h, mi, s int }

func toCivilTime(cs int64) civilTime {
	var t civilTime
	t.y, t.mo, t.d, t.h, t.mi, t.s = splitCivil(cs)
	return t
}

func (t *civilTime) join() int64 { return joinCivil(t.y, t.mo, t.d, t.h, t.mi, t.s) }

// dayFound is how the search for a day ended.
type dayFound int

const (
	dayMatches dayFound = iota // t's day matches
	dayMoved                   // t moved to another day: search again
	dayNone                    // no day matches within the limit
)

// next returns the first civil time in [from, limit) that matches.
func (c *calendar) next(from, limit int64) (int64, bool) {
	if from >= limit {
		return 0, false
	}
	t := toCivilTime(from)
	limitDay := floorDiv(limit-1, secPerDay)
	for {
		switch c.nextDay(&t, limitDay) {
		case dayNone:
			return 0, false
		case dayMoved:
			continue
		}
		if !c.nextClock(&t) {
			continue
		}
		r := t.join()
		if r >= limit {
			return 0, false
		}
		return r, true
	}
}

// nextDay moves t forward to the first day that matches, if that is t's
// own: its year, month and day.
func (c *calendar) nextDay(t *civilTime, limitDay int64) dayFound {
	if t.mo > 12 {
		t.y, t.mo = t.y+1, 1
	}
	if c.years != nil {
		ny, ok := c.years.next(t.y)
		if !ok {
			return dayNone
		}
		if ny != t.y {
			*t = civilTime{ny, 1, 1, 0, 0, 0}
		}
	}
	m := nextBit(c.month, t.mo)
	if m < 0 {
		*t = civilTime{t.y + 1, 1, 1, 0, 0, 0}
		if daysFromCivil(t.y, 1, 1) > limitDay {
			return dayNone
		}
		return dayMoved
	}
	if m != t.mo {
		t.mo, t.d, t.h, t.mi, t.s = m, 1, 0, 0, 0
	}
	dim := daysIn(t.y, t.mo)
	if t.d > dim {
		t.mo, t.d, t.h, t.mi, t.s = t.mo+1, 1, 0, 0, 0
		return dayMoved
	}
	if daysFromCivil(t.y, t.mo, t.d) > limitDay {
		return dayNone
	}
	if !c.dayOK(t.y, t.mo, t.d, dim) {
		t.d, t.h, t.mi, t.s = t.d+1, 0, 0, 0
		return dayMoved
	}
	return dayMatches
}

// nextClock moves t forward to the first time of its day that matches:
// its hour, minute and second. False means t moved past them (to the next
// minute, hour or day): search again.
func (c *calendar) nextClock(t *civilTime) bool {
	hh := nextBit(c.hour, t.h)
	if hh < 0 {
		t.d, t.h, t.mi, t.s = t.d+1, 0, 0, 0
		return false
	}
	if hh != t.h {
		t.h, t.mi, t.s = hh, 0, 0
	}
	mm := nextBit(c.min, t.mi)
	if mm < 0 {
		t.h, t.mi, t.s = t.h+1, 0, 0
		if t.h > 23 {
			t.d, t.h = t.d+1, 0
		}
		return false
	}
	if mm != t.mi {
		t.mi, t.s = mm, 0
	}
	ss := nextBit(c.sec, t.s)
	if ss < 0 {
		t.mi, t.s = t.mi+1, 0
		if t.mi > 59 {
			t.h, t.mi = t.h+1, 0
			if t.h > 23 {
				t.d, t.h = t.d+1, 0
			}
		}
		return false
	}
	t.s = ss
	return true
}

// prev returns the last civil time in [limit, from] that matches.
func (c *calendar) prev(from, limit int64) (int64, bool) {
	if from < limit {
		return 0, false
	}
	t := toCivilTime(from)
	limitDay := floorDiv(limit, secPerDay)
	for {
		switch c.prevDay(&t, limitDay) {
		case dayNone:
			return 0, false
		case dayMoved:
			continue
		}
		if !c.prevClock(&t) {
			continue
		}
		r := t.join()
		if r < limit {
			return 0, false
		}
		return r, true
	}
}

// prevDay moves t back to the last day that matches, if that is t's own:
// its year, month and day.
func (c *calendar) prevDay(t *civilTime, limitDay int64) dayFound {
	if t.mo < 1 {
		t.y, t.mo = t.y-1, 12
	}
	if c.years != nil {
		py, ok := c.years.prev(t.y)
		if !ok {
			return dayNone
		}
		if py != t.y {
			*t = civilTime{py, 12, 31, 23, 59, 59}
		}
	}
	m := prevBit(c.month, t.mo)
	if m < 0 {
		*t = civilTime{t.y - 1, 12, 31, 23, 59, 59}
		if daysFromCivil(t.y, 12, 31) < limitDay {
			return dayNone
		}
		return dayMoved
	}
	if m != t.mo {
		t.mo, t.d, t.h, t.mi, t.s = m, 31, 23, 59, 59
	}
	dim := daysIn(t.y, t.mo)
	if t.d > dim {
		t.d, t.h, t.mi, t.s = dim, 23, 59, 59
	}
	if t.d < 1 {
		t.mo, t.d, t.h, t.mi, t.s = t.mo-1, 31, 23, 59, 59
		return dayMoved
	}
	if daysFromCivil(t.y, t.mo, t.d) < limitDay {
		return dayNone
	}
	if !c.dayOK(t.y, t.mo, t.d, dim) {
		t.d, t.h, t.mi, t.s = t.d-1, 23, 59, 59
		return dayMoved
	}
	return dayMatches
}

// prevClock moves t back to the last time of its day that matches: its
// hour, minute and second. False means t moved before them (to the
// previous minute, hour or day): search again.
func (c *calendar) prevClock(t *civilTime) bool {
	hh := prevBit(c.hour, t.h)
	if hh < 0 {
		t.d, t.h, t.mi, t.s = t.d-1, 23, 59, 59
		return false
	}
	if hh != t.h {
		t.h, t.mi, t.s = hh, 59, 59
	}
	mm := prevBit(c.min, t.mi)
	if mm < 0 {
		t.h, t.mi, t.s = t.h-1, 59, 59
		if t.h < 0 {
			t.d, t.h = t.d-1, 23
		}
		return false
	}
	if mm != t.mi {
		t.mi, t.s = mm, 59
	}
	ss := prevBit(c.sec, t.s)
	if ss < 0 {
		t.mi, t.s = t.mi-1, 59
		if t.mi < 0 {
			t.h, t.mi = t.h-1, 59
			if t.h < 0 {
				t.d, t.h = t.d-1, 23
			}
		}
		return false
	}
	t.s = ss
	return true
}

// fires reports whether the calendar matches any time in the civil years
// [fromYear, toYear).
func (c *calendar) fires(fromYear, toYear int) bool {
	_, ok := c.next(joinCivil(fromYear, 1, 1, 0, 0, 0), joinCivil(toYear, 1, 1, 0, 0, 0))
	return ok
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(int64(y), 400)
	yoe := int64(y) - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	y = int(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday of a day number: 0 = Sunday (1970-01-01 was a Thursday).
func weekday(days int64) int { return int(floorMod(days+4, 7)) }

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func splitCivil(cs int64) (y, mo, d, h, mi, s int) {
	days := floorDiv(cs, secPerDay)
	rem := int(cs - days*secPerDay)
	y, mo, d = civilFromDays(days)
	return y, mo, d, rem / 3600, rem / 60 % 60, rem % 60
}

func joinCivil(y, mo, d, h, mi, s int) int64 {
	return daysFromCivil(y, mo, d)*secPerDay + int64(h*3600+mi*60+s)
}

func fullYears() *yearSet {
	var s yearSet
	for y := minYear; y <= maxYear; y++ {
		s.add(y)
	}
	return &s
}
