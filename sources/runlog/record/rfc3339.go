package record

import "time"

// parseRFC3339 parses YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM] without
// allocating. As RFC 3339 allows, the T may be a t or a space and the Z a z.
// Any number of fraction digits is accepted; digits past the ninth are
// dropped. A time without an offset is in loc. Leap seconds (:60) are
// rejected, as time.Parse does.
func parseRFC3339(b []byte, loc *time.Location) (time.Time, bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	if c := b[10]; c != 'T' && c != 't' && c != ' ' {
		return time.Time{}, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	min, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || min > 59 || sec > 59 {
		return time.Time{}, false
	}
	i := 19
	nsec := 0
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		scale := 100000000
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			nsec += int(b[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == s {
			return time.Time{}, false
		}
	}
	if i == len(b) {
		return time.Date(year, time.Month(month), day, hour, min, sec, nsec, loc), true
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
	switch b[i] {
	case 'Z', 'z':
		if i+1 != len(b) {
			return time.Time{}, false
		}
		return t, true
	case '+', '-':
		if len(b)-i != 6 || b[i+3] != ':' {
			return time.Time{}, false
		}
		oh, ok1 := digits(b[i+1 : i+3])
		om, ok2 := digits(b[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		off := time.Duration(oh)*time.Hour + time.Duration(om)*time.Minute
		if b[i] == '+' {
			off = -off
		}
		return t.Add(off), true
	}
	return time.Time{}, false
}

// digits parses a fixed-width run of ASCII digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
