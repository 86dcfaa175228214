package schedule

import (
	"errors"
	"math"
	"time"
)

// dstRule says what happens to wall-clock times that a time zone change
// skips (spring forward) or repeats (autumn).
type dstRule uint8

const (
	// ruleSystemd: a wall-clock time that does not exist is not run; a
	// repeated wall-clock time is run once, at its first occurrence. This
	// is what systemd's calendarspec.c find_next() yields when a timer is
	// iterated from its previous elapse: every candidate is checked by
	// tm_within_bounds(), which rejects times that mktime() normalizes
	// (the spring gap), and mktime() with tm_isdst=-1 resolves a repeated
	// time with the offset of the time before it, i.e. the first
	// occurrence. Checked against systemd-analyze 252 (oracle_test.go).
	ruleSystemd dstRule = iota
	// ruleCronFixed: a cron job with neither minute nor hour starting with
	// '*'. Vixie cron (cron.c main loop, kept by cronie and Debian's cron)
	// classifies each wake-up by timeDiff, the wall-clock minutes since
	// the last minute it handled: after a forward jump of up to 3 hours
	// ("case 2: ... because we went to DST") it runs "fixed-time jobs for
	// each minute missed" right away, so a job in the skipped hour runs
	// at the first minute after the jump; after a backward jump of up to
	// 3 hours ("case 3: ... because of DST ending") it runs only the
	// wildcard jobs: "The fixed-time jobs probably have already run, and
	// should not be repeated". Jumps larger than 3 hours ("time has
	// changed a *lot*") run everything by the new clock and make nothing
	// up.
	ruleCronFixed
	// ruleCronWild: a cron job whose minute or hour field starts with '*'
	// (entry.c sets MIN_STAR or HR_STAR; @hourly sets HR_STAR). Such jobs
	// run on every wall-clock match of the new clock: in a repeated hour
	// they run again, times skipped by a jump of more than 4 minutes are
	// not made up. Jumps of at most 4 minutes are cron's "small" case
	// (timeDiff <= 5): every skipped minute is run, wildcard or not.
	ruleCronWild
)

// Vixie cron's thresholds on timeDiff, in minutes.
const (
	cronSmall = 5      // timeDiff in 1..5: "wokeup late", run every minute
	cronLarge = 3 * 60 // |timeDiff| > 3h: "clock jumped"
)

// horizon is how far Next and Prev look before giving up.
const horizon = 5 * 366 * 24 * time.Hour

const horizonSec = int64(horizon / time.Second)

const (
	noStart = math.MinInt64
	noEnd   = math.MaxInt64
)

// period is one stretch of constant UTC offset of a location.
type period struct {
	start, end   int64 // Unix seconds; noStart / noEnd if unbounded
	off, prevOff int64 // offset in the period and just before it
}

// periodAt returns the period of constant offset around u. Neighbouring
// periods with the same offset are merged: tzdata has changes of
// abbreviation only, and Go's ZoneBounds splits rule-based periods (after
// the zone file's last transition) at year ends, and, on December 31 of a
// leap year, reports an end that is not after u (Go 1.26). Such bounds are
// not trusted: the next change is then searched with Zone lookups.
func periodAt(loc *time.Location, u int64) period {
	t := time.Unix(u, 0).In(loc)
	_, off := t.Zone()
	p := period{start: noStart, end: noEnd, off: int64(off), prevOff: int64(off)}
	s, e := t.ZoneBounds()
	if !e.IsZero() {
		p.end = e.Unix()
	}
	for i, cur := 0, u; i < 16 && p.end != noEnd; i++ {
		q := p.end
		if q <= cur {
			q = cur + secPerDay
		}
		nt := time.Unix(q, 0).In(loc)
		if _, o := nt.Zone(); o != off {
			if q != p.end {
				q = searchChange(loc, cur, q, off)
			}
			p.end = q
			break
		}
		cur = q
		if _, e := nt.ZoneBounds(); e.IsZero() {
			p.end = noEnd
		} else {
			p.end = e.Unix()
		}
	}
	if !s.IsZero() {
		p.start = s.Unix()
	}
	for i, cur := 0, u; i < 16 && p.start != noStart; i++ {
		q := p.start - 1
		if q >= cur {
			q = cur - secPerDay
		}
		pt := time.Unix(q, 0).In(loc)
		if _, o := pt.Zone(); o != off {
			if q != p.start-1 {
				q = searchChange(loc, q, cur, int(o)) - 1
				_, o = time.Unix(q, 0).In(loc).Zone()
			}
			p.start, p.prevOff = q+1, int64(o)
			break
		}
		cur = q
		if s, _ := pt.ZoneBounds(); s.IsZero() {
			p.start = noStart
		} else {
			p.start = s.Unix()
		}
	}
	return p
}

// searchChange returns the first instant in (lo, hi] whose offset is not
// off; lo has offset off, hi has not.
func searchChange(loc *time.Location, lo, hi int64, off int) int64 {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, o := time.Unix(mid, 0).In(loc).Zone(); o == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// zoned is a calendar read on the wall clock of loc.
type zoned struct {
	cal  calendar
	loc  *time.Location
	rule dstRule
	expr string
	// named: the zone comes from the expression (CRON_TZ, a zone suffix).
	named bool
	// sd, for OnCalendar expressions read on a zone with clock changes,
	// computes elapses as systemd does (systemd.go); cal then only
	// serves as a first guess for Prev.
	sd *sdSpec
}

func (z *zoned) String() string { return z.expr }

// Location is the zone whose wall clock the schedule is read on.
func (z *zoned) Location() *time.Location { return z.loc }

// civilStart is the first wall-clock time of p that may run: the period's
// start, or, where a backward jump repeats wall-clock times that the rule
// runs only once, the end of the repeated stretch.
func (z *zoned) civilStart(p period) int64 {
	if p.start == noStart {
		return noStart
	}
	lo := p.start + p.off
	back := p.prevOff - p.off
	if back <= 0 {
		return lo
	}
	switch z.rule {
	case ruleSystemd:
		return p.start + p.prevOff
	case ruleCronFixed:
		// timeDiff = 1 - back minutes; "negative" unless < -3h.
		if 1-back/60 >= -cronLarge {
			return p.start + p.prevOff
		}
	}
	return lo
}

// gapRun returns the make-up run at the start of p, where a forward jump
// skipped wall-clock times that cron runs right after the jump.
func (z *zoned) gapRun(p period) (int64, bool) {
	if p.start == noStart || z.rule == ruleSystemd {
		return 0, false
	}
	fwd := p.off - p.prevOff
	if fwd <= 0 {
		return 0, false
	}
	timeDiff := 1 + (fwd+59)/60
	switch {
	case timeDiff <= cronSmall:
	case timeDiff <= cronLarge:
		if z.rule != ruleCronFixed {
			return 0, false
		}
	default:
		return 0, false
	}
	if _, ok := z.cal.next(p.start+p.prevOff, p.start+p.off); !ok {
		return 0, false
	}
	// Cron wakes at the first whole minute of the new wall clock.
	g := p.start
	if r := floorMod(g+p.off, 60); r != 0 {
		g += 60 - r
	}
	if g >= p.end {
		return 0, false
	}
	return g, true
}

// maxCatchUp bounds the count of catch-up runs: a 3-hour jump of a
// minutely fixed-time job.
const maxCatchUp = cronLarge + 1

// Runs returns how many runs cron starts at t. At the make-up run after a
// jump forward, cron's main loop (cron.c, "case 1" and "case 2") calls
// find_jobs once for every wall-clock minute from the one after the last it
// handled up to the one it woke in, so the job runs once for each of its
// times among them; everywhere else a run is one run.
func (z *zoned) Runs(t time.Time) int {
	if z.rule == ruleSystemd {
		return 1
	}
	u := t.Unix()
	p := periodAt(z.loc, u)
	g, ok := z.gapRun(p)
	if !ok || g != u {
		return 1
	}
	lo := p.start + p.prevOff
	if r := floorMod(lo, 60); r != 0 {
		lo += 60 - r
	}
	hi := g + p.off + 1 // the minute cron woke in is included
	n := 0
	for n < maxCatchUp {
		c, ok := z.cal.next(lo, hi)
		if !ok {
			break
		}
		n++
		lo = c + 1
	}
	return max(n, 1)
}

// Next returns the first expected run strictly after t, or the zero Time if
// there is none within about five years (or, for systemd, none it can
// compute: NextErr says why).
func (z *zoned) Next(t time.Time) time.Time {
	if z.sd != nil {
		n, _ := z.NextErr(t)
		return n
	}
	return z.calNext(t)
}

// NextErr is Next with the reason there is no next run: systemd's "never"
// or its failure to compute one.
func (z *zoned) NextErr(t time.Time) (time.Time, error) {
	if z.sd == nil {
		n := z.calNext(t)
		if n.IsZero() {
			return n, errNoElapse
		}
		return n, nil
	}
	n, err := z.sdNext(t)
	if err == nil && n.Sub(t) > horizon {
		return time.Time{}, errNoElapse
	}
	return n, err
}

// Prev returns the last expected run at or before t, or the zero Time if
// there is none within about five years.
func (z *zoned) Prev(t time.Time) time.Time {
	p := z.calPrev(t)
	if z.sd == nil {
		return p
	}
	// systemd's runs are the calendar's except near clock changes:
	// check the calendar's answer, else walk systemd's runs from two
	// days before.
	if !p.IsZero() {
		if n, err := z.sdNext(p.Add(-time.Second)); err == nil && n.Equal(p) {
			if n2, err := z.sdNext(p); err != nil || n2.After(t) {
				return p
			}
		}
	}
	var last time.Time
	cur := t.Add(-50 * time.Hour)
	if a := z.calPrev(cur); !a.IsZero() {
		cur = a.Add(-time.Second)
	}
	for range maxPrevWalk {
		n, err := z.sdNext(cur)
		if err != nil || n.After(t) {
			break
		}
		last, cur = n, n
	}
	if last.IsZero() && t.Sub(cur) > 50*time.Hour {
		return p // no run within the walk: as far back as the calendar says
	}
	return last
}

// maxPrevWalk bounds Prev's walk over systemd's runs near a clock change:
// two days of a timer that elapses every minute, with room.
const maxPrevWalk = 10000

func (z *zoned) calNext(t time.Time) time.Time {
	from := t.Unix() + 1
	limit := from + horizonSec
	for u := from; u < limit; {
		p := periodAt(z.loc, u)
		best := int64(noEnd)
		if g, ok := z.gapRun(p); ok && g >= u {
			best = g
		}
		lo := u + p.off
		if cs := z.civilStart(p); cs != noStart && cs > lo {
			lo = cs
		}
		hi := limit + p.off
		if p.end != noEnd && p.end+p.off < hi {
			hi = p.end + p.off
		}
		if c, ok := z.cal.next(lo, hi); ok && c-p.off < best {
			best = c - p.off
		}
		if best != noEnd {
			return time.Unix(best, 0).In(z.loc)
		}
		if p.end == noEnd {
			break
		}
		u = max(p.end, u+1)
	}
	return time.Time{}
}

func (z *zoned) calPrev(t time.Time) time.Time {
	to := t.Unix()
	limit := to - horizonSec
	for u := to; u >= limit; {
		p := periodAt(z.loc, u)
		best := int64(noStart)
		if g, ok := z.gapRun(p); ok && g <= u {
			best = g
		}
		lo := limit + p.off
		if cs := z.civilStart(p); cs != noStart && cs > lo {
			lo = cs
		}
		if c, ok := z.cal.prev(u+p.off, lo); ok && c-p.off > best {
			best = c - p.off
		}
		if best != noStart {
			return time.Unix(best, 0).In(z.loc)
		}
		if p.start == noStart {
			break
		}
		u = min(p.start-1, u-1)
	}
	return time.Time{}
}

// union is the union of several schedules (a list of OnCalendar
// expressions); results are shown in loc.
type union struct {
	parts []*zoned
	loc   *time.Location
}

func (u *union) Location() *time.Location { return u.loc }

// showIn returns the zone to show the union's times in: the expressions'
// own zone when they all name the same one ("daily Europe/Berlin"), else
// loc, the job's.
func (u *union) showIn(loc *time.Location) *time.Location {
	if len(u.parts) == 0 {
		return loc
	}
	first := u.parts[0].loc
	for _, p := range u.parts {
		if !p.named || p.loc.String() != first.String() {
			return loc
		}
	}
	return first
}

// NextErr is Next with the reason there is none. As in systemd's timer.c,
// a part whose next elapse cannot be computed is left out; when no part
// has one, a failure wins over "never".
func (u *union) NextErr(t time.Time) (time.Time, error) {
	var best time.Time
	var firstErr error
	for _, p := range u.parts {
		n, err := p.NextErr(t)
		if err != nil {
			if firstErr == nil || errors.Is(err, errCalendarLoop) {
				firstErr = err
			}
			continue
		}
		if best.IsZero() || n.Before(best) {
			best = n
		}
	}
	if best.IsZero() {
		return best, firstErr
	}
	return best.In(u.loc), nil
}

func (u *union) String() string {
	s := ""
	for i, p := range u.parts {
		if i > 0 {
			s += "; "
		}
		s += p.expr
	}
	return s
}

func (u *union) Next(t time.Time) time.Time {
	var best time.Time
	for _, p := range u.parts {
		n := p.Next(t)
		if !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	if best.IsZero() {
		return best
	}
	return best.In(u.loc)
}

func (u *union) Prev(t time.Time) time.Time {
	var best time.Time
	for _, p := range u.parts {
		n := p.Prev(t)
		if !n.IsZero() && (best.IsZero() || n.After(best)) {
			best = n
		}
	}
	if best.IsZero() {
		return best
	}
	return best.In(u.loc)
}
