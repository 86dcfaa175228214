package schedule

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

const zoneinfoDir = "/usr/share/zoneinfo"

// allZones lists every zone of the time zone database, one name per
// distinct TZif file (links and copies are tested once).
func allZones(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(zoneinfoDir); err != nil {
		t.Fatalf("%s missing: install the Debian package tzdata", zoneinfoDir)
	}
	seen := map[[32]byte]bool{}
	var names []string
	err := filepath.WalkDir(zoneinfoDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(zoneinfoDir, path)
		if d.IsDir() {
			if rel == "posix" || rel == "right" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "localtime" || rel == "posixrules" || rel == "Factory" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(data, []byte("TZif")) {
			return nil
		}
		sum := sha256.Sum256(data)
		if seen[sum] {
			return nil
		}
		if _, err := time.LoadLocation(rel); err != nil {
			return nil
		}
		seen[sum] = true
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) < 100 {
		t.Fatalf("only %d zones under %s: install the Debian package tzdata", len(names), zoneinfoDir)
	}
	return names
}

type propCase struct {
	name  string
	parse func(loc *time.Location) (*zoned, error)
}

func cronCase(expr string) propCase {
	return propCase{"cron " + expr, func(loc *time.Location) (*zoned, error) { z, _, err := parseCron(expr, loc, Debian); return z, err }}
}

func calCase(expr string) propCase {
	return propCase{"OnCalendar " + expr, func(loc *time.Location) (*zoned, error) { return parseOnCalendar(expr, loc) }}
}

var propCases = []propCase{
	cronCase("30 2 * * *"),        // fixed, in the usual spring gap
	cronCase("0 0 1 * *"),         // fixed at midnight, where some zones jump
	cronCase("15 */6 * * *"),      // wildcard hour
	cronCase("*/30 0-3 * * 0"),    // wildcard minute, Sunday nights
	calCase("*-*-* 02:30:00"),     // in the usual spring gap
	calCase("*-*~1 00:00"),        // last day of the month at midnight
	calCase("*-*-* 00/8:15"),      // every eight hours
	calCase("Mon..Fri 00,01:30"),  // weekday list at night
	calCase("Sat *-*-1..7 00:00"), // first Saturday
}

// propYears are a year of ordinary DST rules and one with many zone
// changes (Samoa skipped a day, Russia stopped DST, ...).
var propYears = []int{2011, 2027}

// TestPropertiesAllZones checks, for every zone and a whole year: runs
// strictly increase, none is listed twice, no gap exceeds the schedule's
// longest gap in UTC by more than the zone's largest offset change that
// year (where a forward jump drops a run, as systemd and cron's wildcard
// and large-jump rules do, two gaps merge: there the bound is twice the
// longest gap), Prev finds every run and the one before it, and every run is at a
// matching wall-clock time or (cron) right after a jump that skipped one.
func TestPropertiesAllZones(t *testing.T) {
	zones := allZones(t)
	if testing.Short() {
		zones = zones[:len(zones)/8]
	}
	t.Logf("%d distinct zones", len(zones))
	for _, pc := range propCases {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			zu, err := pc.parse(time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			for _, year := range propYears {
				nominal := maxGap(zu, year)
				for _, name := range zones {
					loc, _ := time.LoadLocation(name)
					z, err := pc.parse(loc)
					if err != nil {
						t.Fatal(err)
					}
					checkYear(t, z, name, year, nominal)
				}
			}
		})
	}
}

// maxGap is the longest gap between runs of a UTC schedule around year.
func maxGap(z *zoned, year int) time.Duration {
	from := time.Date(year-1, 12, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(year+1, 2, 1, 0, 0, 0, 0, time.UTC)
	var longest time.Duration
	prev := z.Next(from)
	for !prev.IsZero() && prev.Before(end) {
		n := z.Next(prev)
		longest = max(longest, n.Sub(prev))
		prev = n
	}
	return longest
}

func checkYear(t *testing.T, z *zoned, zone string, year int, nominal time.Duration) {
	t.Helper()
	start := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Add(-15 * time.Hour)
	end := time.Date(year+1, 1, 1, 0, 0, 0, 0, time.UTC).Add(15 * time.Hour)
	var shift time.Duration
	trs := transitions(z.loc, year)
	for _, tr := range trs {
		_, o1 := tr.Add(-time.Second).Zone()
		_, o2 := tr.Zone()
		shift = max(shift, time.Duration(abs(o2-o1))*time.Second)
	}
	prev := z.Prev(start)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s %s: "+format, append([]any{zone, z.expr}, args...)...)
	}
	for r := z.Next(start); !r.IsZero() && r.Before(end); r = z.Next(r) {
		if !prev.IsZero() {
			if !r.After(prev) {
				fail("run %s not after %s", r, prev)
			}
			bound := nominal + shift
			if forwardJumpIn(trs, prev, r) {
				// A run whose wall-clock time was skipped and that the
				// rule does not make up merges two gaps.
				bound = max(bound, 2*nominal)
			}
			if g := r.Sub(prev); g > bound {
				fail("gap %s..%s of %s exceeds %s (longest gap %s, shift %s)", prev, r, g, bound, nominal, shift)
			}
			if p := z.Prev(r.Add(-time.Second)); !p.Equal(prev) {
				fail("Prev(%s - 1s) = %s, want %s", r, p, prev)
			}
		}
		if p := z.Prev(r); !p.Equal(r) {
			fail("Prev(%s) = %s, want itself", r, p)
		}
		if r.Nanosecond() != 0 {
			fail("run %s not on a whole second", r)
		}
		if !matchesWall(z, r) && !afterJump(z, r) {
			fail("run %s is neither a matching wall-clock time nor right after a jump", r)
		}
		prev = r
	}
}

func matchesWall(z *zoned, r time.Time) bool {
	_, off := r.Zone()
	cs := r.Unix() + int64(off)
	c, ok := z.cal.next(cs, cs+1)
	return ok && c == cs
}

// afterJump: r is cron's first whole minute after a forward jump.
func afterJump(z *zoned, r time.Time) bool {
	if z.rule == ruleSystemd {
		return false
	}
	p := periodAt(z.loc, r.Unix())
	g, ok := z.gapRun(p)
	return ok && g == r.Unix()
}

// forwardJumpIn reports whether the clock jumps forward in (a, b].
func forwardJumpIn(trs []time.Time, a, b time.Time) bool {
	for _, tr := range trs {
		_, o1 := tr.Add(-time.Second).Zone()
		_, o2 := tr.Zone()
		if o2 > o1 && tr.After(a) && !tr.After(b) {
			return true
		}
	}
	return false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
