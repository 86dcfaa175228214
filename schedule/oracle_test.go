package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// The oracle for OnCalendar is systemd-analyze (Debian package systemd).
// These tests compare our expected runs with its output; they skip only
// where systemd-analyze is absent.

const systemdAnalyze = "/usr/bin/systemd-analyze"

func needSystemdAnalyze(t *testing.T) string {
	t.Helper()
	path := systemdAnalyze
	if _, err := os.Stat(path); err != nil {
		return testproc.Program(t, "systemd-analyze", "systemd")
	}
	testproc.SkipShort(t, "systemd-analyze")
	return path
}

var (
	oracleLine   = regexp.MustCompile(`^\s*(?:Next elapse|Iter\. #\d+|\(in UTC\)): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC$`)
	oracleFailed = regexp.MustCompile(`Failed to parse calendar specification '(.*)': `)
	oracleNoNext = regexp.MustCompile(`Failed to determine next elapse for '(.*)': `)
)

// oracle runs systemd-analyze calendar with TZ=tz on all exprs and returns
// for each the next n elapses after base, or ok=false if systemd rejects
// the expression.
func oracle(t *testing.T, bin, tz string, exprs []string, base time.Time, n int) map[string]oracleResult {
	t.Helper()
	args := []string{"calendar", "--iterations=" + strconv.Itoa(n),
		"--base-time=@" + strconv.FormatInt(base.Unix(), 10), "--"}
	cmd := exec.Command(bin, append(args, exprs...)...)
	cmd.Env = append(os.Environ(), "TZ="+tz, "SYSTEMD_COLORS=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := map[string]oracleResult{}
	failed, stuck := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(errb.String(), "\n") {
		if m := oracleFailed.FindStringSubmatch(line); m != nil {
			failed[m[1]] = true
		}
		if m := oracleNoNext.FindStringSubmatch(line); m != nil {
			stuck[m[1]] = true
		}
	}
	if err != nil && len(failed) == 0 && len(stuck) == 0 {
		t.Fatalf("systemd-analyze: %v: %s", err, errb.String())
	}
	var good []string
	for _, e := range exprs {
		switch {
		case failed[e]:
			res[e] = oracleResult{}
			continue
		case stuck[e]:
			// systemd prints nothing for an expression whose
			// next elapse it fails to compute at some iteration.
			res[e] = oracleResult{ok: true, stuck: true}
			continue
		}
		good = append(good, e)
	}
	block := -1
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "Normalized form:") {
			block++
			if block >= len(good) {
				t.Fatalf("systemd-analyze printed more blocks than expressions:\n%s", out.String())
			}
			res[good[block]] = oracleResult{ok: true}
			continue
		}
		m := oracleLine.FindStringSubmatch(line)
		if m == nil || block < 0 {
			continue
		}
		ts, err := time.Parse("2006-01-02 15:04:05", m[1])
		if err != nil {
			t.Fatalf("parsing systemd-analyze output %q: %v", line, err)
		}
		r := res[good[block]]
		r.runs = append(r.runs, ts)
		res[good[block]] = r
	}
	if block != len(good)-1 {
		t.Fatalf("systemd-analyze printed %d blocks for %d expressions", block+1, len(good))
	}
	return res
}

type oracleResult struct {
	runs []time.Time
	ok   bool
	// stuck: "Failed to determine next elapse" within the iterations.
	stuck bool
}

// transitions returns the instants at which loc changes its UTC offset
// during year.
func transitions(loc *time.Location, year int) []time.Time {
	var out []time.Time
	t := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	end := time.Date(year+1, 1, 1, 0, 0, 0, 0, loc)
	for t.Before(end) {
		_, e := t.ZoneBounds()
		if e.IsZero() || !e.Before(end) {
			break
		}
		_, o1 := e.Add(-time.Second).Zone()
		_, o2 := e.Zone()
		if o1 != o2 {
			out = append(out, e)
		}
		t = e
	}
	return out
}

func formatRuns(ts []time.Time) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "\n  %s", t.UTC().Format("2006-01-02 15:04:05 Mon"))
	}
	return b.String()
}

var oracleZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Shanghai", "UTC"}

// oracleExprs are compared around each DST change of each oracle zone.
var oracleExprs = []struct {
	expr string
	n    int
}{
	{"Mon..Fri 09:00", 12},
	{"Mon,Wed,Fri 12:30", 8},
	{"Sat,Sun 10:00", 6},
	{"Mon-Wed *-*-* 02:30", 6},
	{"*-*-* 03:00:00", 5},
	{"*-*-* 02:30:00", 5},
	{"*-*-* 02:00:00", 5},
	{"*-*-* 01:30:00", 5},
	{"*-*-* 01,02,03:30", 9},
	{"*-*-* 02:*:00", 150},
	{"*-*-* 00/3:30", 20},
	{"*:0/15", 120},
	{"*:0/30", 60},
	{"*-*-* *:00/20:30", 80},
	{"daily", 5},
	{"weekly", 4},
	{"hourly", 40},
	{"monthly", 3},
	{"quarterly", 3},
	{"semiannually", 3},
	{"yearly", 2},
	{"*-*-1,15 12:00", 4},
	{"Sat *-*-1..7 18:00:00", 3},
	{"Sun *-*-* 02:30", 3},
	{"*-*~1 23:00", 3},
	{"*-*~1..3 02:30", 6},
	{"*-*~7/2", 6},
	{"*-*-1/10 06:00", 6},
	{"*-02-29 12:00", 1},
	{"2027/2-*-01 00:00", 3},
	{"2027..2029-03,04,10,11-* 02:15:30", 40},
	{"*-1..12/3-1 00:00", 4},
	{"Mon..Wed,Sat 08..18/2:0/30", 40},
	{"daily UTC", 3},
}

func oracleBases(loc *time.Location) []time.Time {
	var bases []time.Time
	for _, year := range []int{2027} {
		tr := transitions(loc, year)
		if len(tr) == 0 {
			bases = append(bases, time.Date(year, 3, 27, 0, 0, 0, 0, time.UTC), time.Date(year, 10, 30, 12, 0, 0, 0, time.UTC))
		}
		for _, x := range tr {
			// Bases before the change, never inside a repeated hour:
			// there systemd's answer depends on where it starts.
			bases = append(bases, x.Add(-26*time.Hour), x.Add(-3*time.Hour-17*time.Minute))
		}
	}
	return bases
}

func TestOnCalendarOracle(t *testing.T) {
	bin := needSystemdAnalyze(t)
	var exprs []string
	maxN := 0
	for _, tc := range oracleExprs {
		exprs = append(exprs, tc.expr)
		maxN = max(maxN, tc.n)
	}
	for _, zone := range oracleZones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, base := range oracleBases(loc) {
			res := oracle(t, bin, zone, exprs, base, maxN)
			for _, tc := range oracleExprs {
				r := res[tc.expr]
				if !r.ok {
					t.Fatalf("systemd rejects %q", tc.expr)
				}
				s, err := ParseOnCalendar([]string{tc.expr}, loc)
				if err != nil {
					t.Fatalf("ParseOnCalendar(%q): %v", tc.expr, err)
				}
				want := r.runs[:min(tc.n, len(r.runs))]
				if got := Upcoming(s, base, tc.n); !equalTimes(got, want) {
					t.Errorf("%s %q after %s:\n got %s\nwant %s", zone, tc.expr, base.UTC(), formatRuns(got), formatRuns(want))
				}
			}
		}
	}
}

// TestOnCalendarOracleZoneSuffix runs the expression with the zone as
// suffix and TZ=UTC, the other way a zone reaches the schedule.
func TestOnCalendarOracleZoneSuffix(t *testing.T) {
	bin := needSystemdAnalyze(t)
	exprs := []string{"*-*-* 02:30:00", "*-*-* 02:15", "Sun *-*-* 01..03:00", "daily"}
	for _, zone := range oracleZones[:3] {
		loc, _ := time.LoadLocation(zone)
		var zexprs []string
		for _, e := range exprs {
			zexprs = append(zexprs, e+" "+zone)
		}
		for _, base := range oracleBases(loc) {
			res := oracle(t, bin, "UTC", zexprs, base, 6)
			for _, expr := range zexprs {
				s, err := ParseOnCalendar([]string{expr}, time.UTC)
				if err != nil {
					t.Fatalf("%q: %v", expr, err)
				}
				if got := s.(Zoned).Location(); got.String() != zone {
					t.Errorf("%q: union location %s, want the expression's %s", expr, got, zone)
				}
				if got, want := Upcoming(s, base, 6), res[expr].runs; !equalTimes(got, want) {
					t.Errorf("%q after %s:\n got %s\nwant %s", expr, base.UTC(), formatRuns(got), formatRuns(want))
				}
			}
		}
	}
}

// TestOnCalendarOracleSyntax checks that we accept what systemd accepts
// and reject what it rejects (fractional seconds and never-firing
// expressions aside, which we reject on purpose).
func TestOnCalendarOracleSyntax(t *testing.T) {
	bin := needSystemdAnalyze(t)
	base := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	exprs := []string{
		"*-*-5..5", "*-*-3..1", "*:50/15", "*-*~1", "*-*~0", "*-*~7..1", "*-*~1..7",
		"*-02~03", "*-*~7/2", "*-*~1/2", "*-*~2/1", "*-*~28", "*-*~29", "*-*~1..6/2", "*-*~3..5",
		"Fri..Mon", "Mon-Fri", "mon,FRI", "Monday", "Mo", "Mond", "Mon..Wed,Sat 12:00",
		"Sat..Sun", "Sun..Sat", "Mon-Wed-Fri", "Mon..Tue..Wed", "Mon,", "Mon, 12:00",
		"2027/2-1-1", "27-1-1", "1970-1-1", "1969-1-1", "2200-1-1", "2199-12-31 23:59:59",
		"semiannually", "bi-annually", "anually", "Quarterly", "HOURLY", "tomorrow", "now",
		"12:00", "12", "*-1", "1-1", "*-*-* *:*:*", "*:*:0/10", "*:*:55/10", "*:0/59", "*:0/60",
		"*:0..10/60", "*:0/0", "*-*-* 24:00", "*-*-32", "*-*-0", "*-0-1", "*-13-1",
		"*-*-* 12:00:60", "*-*-* 12:*", "*-*-*", "12:00:00:00", "*-*-* 00:00:00 Mon",
		"*-*-* 0..23/5:00", "*-*-* 5/5:00", "*-*-* 22/5:00", "*-*-* 20..22/5:00",
		"*-*-1..31/2", "*-1..12/3-1", "*-*-* 2,1:00", "*-*-* 1:2:3", "12:00 Europe/Nowhere",
		"2027-01-01 12:00 Europe/Berlin", "hourly UTC", "12:00 utc", "@1800000000",
		"*-*-* 00:00:00/5", "*-*-* 0:0:0,30", "*/2-1", "*-*/2-1", "1,-1", "1..2..3-1",
		"2027~01-01", "2027-01~01", "*-*-1,", "*-*-,1", "*-*-* :00", "*-*-* 1:", "-1-1",
		"*-*-1/31", "*-*-1/30", "*-*-01..31/31", "Mon *-*-* *:*:*",
	}
	res := oracle(t, bin, "UTC", exprs, base, 1)
	for _, e := range exprs {
		sysOK := res[e].ok
		_, err := ParseOnCalendar([]string{e}, time.UTC)
		if sysOK != (err == nil) {
			t.Errorf("%q: systemd accepts=%v, we: %v", e, sysOK, err)
		}
	}
}

func TestOnCalendarOracleRejectedOnPurpose(t *testing.T) {
	bin := needSystemdAnalyze(t)
	base := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ expr, want string }{
		{"*-*-* 12:00:00.5", "fractional seconds are not supported"},
		{"*-02-30", "never fires"},
		{"2027-02-29", "never fires"},
		{"*-04-31 12:00", "never fires"},
	} {
		r := oracle(t, bin, "UTC", []string{tc.expr}, base, 2)[tc.expr]
		runs, sysOK := r.runs, r.ok
		if !sysOK {
			t.Errorf("%q: systemd rejects it; the test expects it to accept", tc.expr)
		}
		if strings.Contains(tc.want, "never") && len(runs) != 0 {
			t.Errorf("%q: systemd elapses at %v, expected never", tc.expr, runs)
		}
		_, err := ParseOnCalendar([]string{tc.expr}, time.UTC)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.expr, err, tc.want)
		}
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// sweepZones and sweepExprs are compared around every UTC offset change
// of the zone in sweepYears (JOBWATCH_SYSTEMD_ORACLE=long: more years).
var sweepZones = []string{
	"Pacific/Chatham", "Europe/Dublin", "Africa/Casablanca", "America/Santiago", "America/Sao_Paulo",
	"Asia/Tehran", "Australia/Lord_Howe", "Pacific/Apia", "America/Nuuk", "Europe/Berlin", "America/New_York",
}

var sweepExprs = []string{
	"*:0/15", "*:0/30", "hourly", "daily", "*-*-* 03:45", "*-*-* 02:30", "*-*-* 00:30", "*-*-* 01:00",
	"*-*-* 23:30", "*-*-* 1,2,3:0,30", "*-*-* 00/2:00", "*-*-* 00/3:00", "*-*-* 0,1:00", "Sat,Sun 00:00",
	"*-*-* *:00/20:30", "*-*-* 02:*:00", "*-*-* 22..23,00..01:00/20", "Mon..Fri 01:15", "*-*~1 02:00",
}

func sweepYears() []int {
	if os.Getenv("JOBWATCH_SYSTEMD_ORACLE") == "long" {
		return []int{2011, 2018, 2021, 2022, 2026, 2027}
	}
	return []int{2026, 2027}
}

// TestOnCalendarOracleSweep: systemd's own DST behaviour (systemd.go)
// against systemd-analyze around every offset change of eleven zones. An
// expression whose next elapse systemd fails to compute must end our runs
// at the same point: we then expect no run at all after it.
func TestOnCalendarOracleSweep(t *testing.T) {
	bin := needSystemdAnalyze(t)
	const n = 120
	compared, changes := 0, 0
	for _, zone := range sweepZones {
		loc := mustLoc(t, zone)
		for _, year := range sweepYears() {
			for _, x := range transitions(loc, year) {
				changes++
				for _, base := range []time.Time{x.Add(-26 * time.Hour), x.Add(-3*time.Hour - 17*time.Minute)} {
					res := oracle(t, bin, zone, sweepExprs, base, n)
					for _, e := range sweepExprs {
						s, err := ParseOnCalendar([]string{e}, loc)
						if err != nil {
							t.Fatalf("%q: %v", e, err)
						}
						r := res[e]
						if r.stuck {
							checkStuck(t, bin, zone, e, s, base, n)
							compared++
							continue
						}
						if got := Upcoming(s, base, n); !equalTimes(got, r.runs) {
							t.Errorf("%s %q after %s (change at %s):\n got %s\nwant %s", zone, e, base.UTC(), x.UTC(),
								formatRuns(got[:min(len(got), 12)]), formatRuns(r.runs[:min(len(r.runs), 12)]))
						}
						compared++
					}
				}
			}
		}
	}
	t.Logf("%d comparisons of %d expressions around %d offset changes in %v", compared, len(sweepExprs), changes, sweepYears())
}

// checkStuck: systemd fails at some iteration; our runs must stop there,
// with the same runs before it.
func checkStuck(t *testing.T, bin, zone, expr string, s Schedule, base time.Time, n int) {
	t.Helper()
	got := Upcoming(s, base, n)
	if len(got) >= n {
		t.Errorf("%s %q after %s: systemd fails to compute an elapse within %d, we expect %d runs", zone, expr, base.UTC(), n, len(got))
		return
	}
	if len(got) > 0 {
		r := oracle(t, bin, zone, []string{expr}, base, len(got))[expr]
		if r.stuck || !equalTimes(got, r.runs) {
			t.Errorf("%s %q after %s: before systemd fails:\n got %s\nwant %s", zone, expr, base.UTC(), formatRuns(got), formatRuns(r.runs))
		}
	}
	if r := oracle(t, bin, zone, []string{expr}, base, len(got)+1)[expr]; !r.stuck {
		t.Errorf("%s %q after %s: systemd does not fail after %d runs: %s", zone, expr, base.UTC(), len(got), formatRuns(r.runs))
	}
	if _, err := s.(*union).parts[0].NextErr(lastOr(got, base)); !errors.Is(err, errCalendarLoop) {
		t.Errorf("%s %q: NextErr = %v, want the calendar loop", zone, expr, err)
	}
}

func lastOr(ts []time.Time, d time.Time) time.Time {
	if len(ts) == 0 {
		return d
	}
	return ts[len(ts)-1]
}

// TestOnCalendarOracleAbbreviation: a suffix that is an abbreviation of
// the local zone forces tm_isdst (EST is also an IANA zone name: systemd
// takes the local reading first).
func TestOnCalendarOracleAbbreviation(t *testing.T) {
	bin := needSystemdAnalyze(t)
	for zone, exprs := range map[string][]string{
		"Europe/Berlin": {"12:00 CEST", "12:00 CET", "*-*-* 02:30 CET", "*:0/30 CEST", "Sat 03:00 CET"},
		// Not modelled: "*-*-* 01:30 EDT" after the repeated hour, where
		// systemd 252.38 elapses at 01:30 EST the next day.
		"America/New_York": {"12:00 EST", "12:00 EDT", "*-*-* 03:30 EDT"},
	} {
		loc := mustLoc(t, zone)
		for _, year := range []int{2027} {
			for _, x := range transitions(loc, year) {
				for _, base := range []time.Time{x.Add(-50 * time.Hour), x.Add(-3*time.Hour - 17*time.Minute), x.Add(5 * time.Hour)} {
					res := oracle(t, bin, zone, exprs, base, 6)
					for _, e := range exprs {
						s, err := ParseOnCalendar([]string{e}, loc)
						if err != nil {
							t.Fatalf("%q: %v", e, err)
						}
						if got := Upcoming(s, base, 6); !equalTimes(got, res[e].runs) {
							t.Errorf("%s %q after %s:\n got %s\nwant %s", zone, e, base.UTC(), formatRuns(got), formatRuns(res[e].runs))
						}
					}
				}
			}
		}
	}
}
