package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("zone %s: %v (Debian package tzdata)", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func formatRFC(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format(time.RFC3339)
	}
	return out
}

// Expected runs around DST changes in 2027:
// Europe/Berlin       Mar 28 02:00 -> 03:00 (01:00Z), Oct 31 03:00 -> 02:00 (01:00Z)
// America/New_York    Mar 14 02:00 -> 03:00 (07:00Z), Nov 7 02:00 -> 01:00 (06:00Z)
// Australia/Lord_Howe Apr 4 02:00 -> 01:30 (Apr 3 15:00Z), Oct 3 02:00 -> 02:30 (Oct 2 15:30Z)
var cronDSTCases = []struct {
	name, zone, expr, after string
	want                    []string
}{
	{"issue example: fixed time in the spring gap runs right after the jump", "Europe/Berlin", "30 2 * * *", "2027-03-27T00:00:00Z",
		[]string{"2027-03-27T02:30:00+01:00", "2027-03-28T03:00:00+02:00", "2027-03-29T02:30:00+02:00"}},
	{"fixed time in the repeated hour runs once", "Europe/Berlin", "30 2 * * *", "2027-10-30T00:00:00Z",
		[]string{"2027-10-30T02:30:00+02:00", "2027-10-31T02:30:00+02:00", "2027-11-01T02:30:00+01:00"}},
	{"wildcard hour runs again in the repeated hour", "Europe/Berlin", "30 * * * *", "2027-10-31T00:00:00Z",
		[]string{"2027-10-31T02:30:00+02:00", "2027-10-31T02:30:00+01:00", "2027-10-31T03:30:00+01:00"}},
	{"wildcard hour skips the spring gap", "Europe/Berlin", "30 * * * *", "2027-03-28T00:00:00Z",
		[]string{"2027-03-28T01:30:00+01:00", "2027-03-28T03:30:00+02:00", "2027-03-28T04:30:00+02:00"}},
	{"wildcard minute in the skipped hour is not made up", "Europe/Berlin", "*/20 2 * * *", "2027-03-27T12:00:00Z",
		[]string{"2027-03-29T02:00:00+02:00", "2027-03-29T02:20:00+02:00", "2027-03-29T02:40:00+02:00"}},
	{"wildcard minute runs in both repeated hours", "Europe/Berlin", "*/20 2 * * *", "2027-10-30T12:00:00Z",
		[]string{"2027-10-31T02:00:00+02:00", "2027-10-31T02:20:00+02:00", "2027-10-31T02:40:00+02:00",
			"2027-10-31T02:00:00+01:00", "2027-10-31T02:20:00+01:00", "2027-10-31T02:40:00+01:00", "2027-11-01T02:00:00+01:00"}},
	{"several skipped fixed times make one run", "Europe/Berlin", "0,30 2 * * *", "2027-03-27T12:00:00Z",
		[]string{"2027-03-28T03:00:00+02:00", "2027-03-29T02:00:00+02:00"}},
	{"made-up run and a run at the new hour coincide", "Europe/Berlin", "30 2 * * *,0 3 * * *", "2027-03-27T12:00:00Z", nil},
	{"skipped and normal fixed times", "Europe/Berlin", "30 2,3 * * *", "2027-03-27T12:00:00Z",
		[]string{"2027-03-28T03:00:00+02:00", "2027-03-28T03:30:00+02:00", "2027-03-29T02:30:00+02:00"}},
	{"@daily is a fixed-time job", "Europe/Berlin", "@daily", "2027-03-27T12:00:00Z",
		[]string{"2027-03-28T00:00:00+01:00", "2027-03-29T00:00:00+02:00"}},
	{"@hourly is a wildcard job", "Europe/Berlin", "@hourly", "2027-10-31T00:30:00Z",
		[]string{"2027-10-31T02:00:00+01:00", "2027-10-31T03:00:00+01:00"}},
	{"@hourly in the repeated hour", "Europe/Berlin", "@hourly", "2027-10-30T23:30:00Z",
		[]string{"2027-10-31T02:00:00+02:00", "2027-10-31T02:00:00+01:00", "2027-10-31T03:00:00+01:00", "2027-10-31T04:00:00+01:00"}},
	{"New York spring", "America/New_York", "30 2 * * *", "2027-03-13T12:00:00Z",
		[]string{"2027-03-14T03:00:00-04:00", "2027-03-15T02:30:00-04:00"}},
	{"New York autumn fixed", "America/New_York", "30 1 * * *", "2027-11-06T12:00:00Z",
		[]string{"2027-11-07T01:30:00-04:00", "2027-11-08T01:30:00-05:00"}},
	{"New York autumn wildcard", "America/New_York", "30 * * * *", "2027-11-07T04:00:00Z",
		[]string{"2027-11-07T00:30:00-04:00", "2027-11-07T01:30:00-04:00", "2027-11-07T01:30:00-05:00", "2027-11-07T02:30:00-05:00"}},
	{"Lord Howe half-hour spring: fixed runs after the jump", "Australia/Lord_Howe", "15 2 * * *", "2027-10-02T00:00:00Z",
		[]string{"2027-10-03T02:30:00+11:00", "2027-10-04T02:15:00+11:00"}},
	{"Lord Howe half-hour spring: wildcard skips", "Australia/Lord_Howe", "15 * * * *", "2027-10-02T14:00:00Z",
		[]string{"2027-10-03T01:15:00+10:30", "2027-10-03T03:15:00+11:00"}},
	{"Lord Howe half-hour autumn: fixed once", "Australia/Lord_Howe", "45 1 * * *", "2027-04-03T00:00:00Z",
		[]string{"2027-04-04T01:45:00+11:00", "2027-04-05T01:45:00+10:30"}},
	{"Lord Howe half-hour autumn: wildcard twice", "Australia/Lord_Howe", "45 * * * *", "2027-04-03T13:00:00Z",
		[]string{"2027-04-04T00:45:00+11:00", "2027-04-04T01:45:00+11:00", "2027-04-04T01:45:00+10:30", "2027-04-04T02:45:00+10:30"}},
	{"UTC has no jumps", "UTC", "30 2 * * *", "2027-03-27T12:00:00Z",
		[]string{"2027-03-28T02:30:00Z", "2027-03-29T02:30:00Z"}},
	{"Shanghai has no jumps", "Asia/Shanghai", "0 9 * * MON-FRI", "2027-03-26T12:00:00Z",
		[]string{"2027-03-29T09:00:00+08:00", "2027-03-30T09:00:00+08:00"}},
}

func TestCronDST(t *testing.T) {
	for _, tc := range cronDSTCases {
		t.Run(tc.name, func(t *testing.T) {
			loc := mustLoc(t, tc.zone)
			s, err := ParseCron(tc.expr, loc, Debian)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("ParseCron(%q, Debian) accepted", tc.expr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := formatRFC(Upcoming(s, mustTime(t, tc.after), len(tc.want)), loc)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Prev assigns each run to itself and finds the one before.
			for i, w := range tc.want {
				r := mustTime(t, w)
				if p := s.Prev(r); !p.Equal(r) {
					t.Errorf("Prev(%s) = %s", w, p)
				}
				if i > 0 {
					if p := s.Prev(r.Add(-time.Nanosecond)); !p.Equal(mustTime(t, tc.want[i-1])) {
						t.Errorf("Prev(%s - 1ns) = %s, want %s", w, p, tc.want[i-1])
					}
				}
			}
		})
	}
}

func TestCronPrevInRepeatedHour(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	s, _ := ParseCron("30 2 * * *", loc, Debian)
	// 02:45 of the second (CET) pass belongs to the slot of 02:30 CEST.
	got := s.Prev(mustTime(t, "2027-10-31T02:45:00+01:00"))
	if want := mustTime(t, "2027-10-31T02:30:00+02:00"); !got.Equal(want) {
		t.Errorf("Prev = %s, want %s", got, want)
	}
	// A time that does not exist on the wall clock is an instant all the
	// same: 02:59:59+02:00 on Mar 28 is 01:59:59 CET.
	got = s.Prev(mustTime(t, "2027-03-28T02:59:59+02:00"))
	if want := mustTime(t, "2027-03-27T02:30:00+01:00"); !got.Equal(want) {
		t.Errorf("Prev = %s, want %s", got, want)
	}
}

func TestCronFields(t *testing.T) {
	utc := time.UTC
	for _, tc := range []struct {
		expr, after string
		want        []string
	}{
		{"0 12 13 * 5", "2027-08-01T00:00:00Z", // day 13 OR Friday
			[]string{"2027-08-06T12:00:00Z", "2027-08-13T12:00:00Z", "2027-08-20T12:00:00Z"}},
		{"0 12 */2 * 5", "2027-08-01T00:00:00Z", // DOM_STAR: odd days AND Friday
			[]string{"2027-08-13T12:00:00Z", "2027-08-27T12:00:00Z", "2027-09-03T12:00:00Z"}},
		{"0 12 13 * *", "2027-08-01T00:00:00Z", []string{"2027-08-13T12:00:00Z", "2027-09-13T12:00:00Z"}},
		{"0 9 * jan-MAR Mon-fri", "2027-03-31T00:00:00Z", []string{"2027-03-31T09:00:00Z", "2028-01-03T09:00:00Z"}},
		{"0 0 * * 7", "2027-08-01T00:00:00Z", []string{"2027-08-08T00:00:00Z", "2027-08-15T00:00:00Z"}},
		{"0 0 * * 0,7", "2027-08-01T00:00:00Z", []string{"2027-08-08T00:00:00Z"}},
		{"@weekly", "2027-08-01T00:00:00Z", []string{"2027-08-08T00:00:00Z"}},
		{"@monthly", "2027-08-01T00:00:00Z", []string{"2027-09-01T00:00:00Z"}},
		{"@yearly", "2027-08-01T00:00:00Z", []string{"2028-01-01T00:00:00Z"}},
		{"@annually", "2027-08-01T00:00:00Z", []string{"2028-01-01T00:00:00Z"}},
		{"@midnight", "2027-08-01T00:00:00Z", []string{"2027-08-02T00:00:00Z"}},
		{"1-10/3,50 * * * *", "2027-08-01T00:00:00Z",
			[]string{"2027-08-01T00:01:00Z", "2027-08-01T00:04:00Z", "2027-08-01T00:07:00Z", "2027-08-01T00:10:00Z", "2027-08-01T00:50:00Z", "2027-08-01T01:01:00Z"}},
		{"0 0 29 2 *", "2027-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 30 2 MON", "2027-01-31T00:00:00Z", []string{"2027-02-01T00:00:00Z"}},
		{"0 0 31 * *", "2027-01-31T00:00:00Z", []string{"2027-03-31T00:00:00Z", "2027-05-31T00:00:00Z"}},
		{"  0   0  1  *  *  ", "2027-01-31T00:00:00Z", []string{"2027-02-01T00:00:00Z"}},
		{"* * * * *", "2027-01-31T00:00:30.5Z", []string{"2027-01-31T00:01:00Z", "2027-01-31T00:02:00Z"}},
	} {
		s, err := ParseCron(tc.expr, utc, Debian)
		if err != nil {
			t.Errorf("ParseCron(%q, Debian): %v", tc.expr, err)
			continue
		}
		got := formatRFC(Upcoming(s, mustTime(t, tc.after), len(tc.want)), utc)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q after %s:\n got %v\nwant %v", tc.expr, tc.after, got, tc.want)
		}
	}
}

func TestCronTZ(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	s, err := ParseCron("CRON_TZ=America/New_York 0 9 * * *", berlin, Cronie)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.(Zoned).Location().String(); got != "America/New_York" {
		t.Errorf("location %s, want CRON_TZ's", got)
	}
	got := s.Next(mustTime(t, "2027-08-01T00:00:00Z")).Format(time.RFC3339)
	if want := "2027-08-01T09:00:00-04:00"; got != want {
		t.Errorf("Next = %s, want %s", got, want)
	}
	if s, _ := ParseCron("0 9 * * *", nil, Debian); s.(Zoned).Location() != time.Local {
		t.Error("nil location is not time.Local")
	}
	// Issue 11: Debian's cron in UTC ran CRON_TZ=Asia/Tokyo 0 12 * * * at
	// 12:00 UTC.
	d, err := ParseCron("CRON_TZ=Asia/Tokyo 0 12 * * *", time.UTC, Debian)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Next(mustTime(t, "2027-08-01T00:00:00Z")).Format(time.RFC3339), "2027-08-01T12:00:00Z"; got != want {
		t.Errorf("debian: Next = %s, want %s", got, want)
	}
	w := CronWarnings("CRON_TZ=Asia/Tokyo 0 12 * * *", time.UTC, Debian)
	if len(w) != 1 || !strings.Contains(w[0], "CRON_TZ=Asia/Tokyo is ignored by Debian's cron") || !strings.Contains(w[0], "expected in UTC") {
		t.Errorf("debian warnings %q", w)
	}
	if w := CronWarnings("CRON_TZ=Asia/Tokyo 0 12 * * *", time.UTC, Cronie); len(w) != 0 {
		t.Errorf("cronie warnings %q", w)
	}
}

func TestCronErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"", "empty cron expression"},
		{"   ", "empty cron expression"},
		{"* * * *", "want 5 fields"},
		{"* * * * * *", "want 5 fields"},
		{"61 * * * *", "minute: 61 out of range 0-59"},
		{"* 24 * * *", "hour: 24 out of range 0-23"},
		{"* * 0 * *", "day-of-month: 0 out of range 1-31"},
		{"* * 32 * *", "day-of-month: 32 out of range 1-31"},
		{"* * * 13 *", "month: 13 out of range 1-12"},
		{"* * * 0 *", "month: 0 out of range 1-12"},
		{"* * * * 8", "day-of-week: 8 out of range 0-7"},
		{"* * * FOO *", `month: unknown value "FOO"`},
		{"* * * * MONDAY", `day-of-week: unknown value "MONDAY"`},
		{"5/10 * * * *", "needs a range or * before it"},
		{"*/0 * * * *", `bad step "0"`},
		{"*/x * * * *", `bad step "x"`},
		{"*/-1 * * * *", `bad step "-1"`},
		{"5-2 * * * *", "never fires: its minute field matches nothing"},
		{"0 5-2 * * *", "never fires: its hour field matches nothing"},
		{"0 0 * * 6-0", "never fires: no date matches"},
		{"0 0 * feb-jan *", "never fires: no date matches"},
		{"1/5 * * * *", "needs a range or * before it"},
		{"0 0 * * 7/2", "needs a range or * before it"},
		{"1,2/5 * * * *", "needs a range or * before it"},
		{"1x * * * *", `unexpected "x" after 1`},
		{"1,2x * * * *", `unexpected "x" after 2`},
		{"*/5x * * * *", "bad step"},
		{"1-5/ * * * *", "bad step"},
		{"*/ * * * *", "bad step"},
		{"5-3/0 * * * *", "bad step"},
		{"70-3 * * * *", "70 out of range"},
		{"0 0 * 13-1 *", "13 out of range"},
		{"99999999999 * * * *", "out of range"},
		{"0 0 * January *", `unknown value "January"`},
		{"@DAILY", "unknown shortcut @DAILY"},
		{"@Daily", "unknown shortcut"},
		{"1,,2 * * * *", "empty list element"},
		{"1, * * * *", "empty list element"},
		{"- * * * *", `unknown value "-"`},
		{"1- * * * *", "missing value"},
		{"L * * * *", `unknown value "L"`},
		{"? * * * *", `unknown value "?"`},
		{"0 0 L * *", `unknown value "L"`},
		{"0 0 * * 5x", `unexpected "x" after 5`},
		{"@reboot", "@reboot has no schedule"},
		{"@every 5m", "@every takes no fields"},
		{"@fortnightly", "unknown shortcut"},
		{"@daily extra", "takes no fields"},
		{"0 0 30 2 *", "never fires"},
		{"0 0 31 4,6,9,11 *", "never fires"},
		{"0 0 30,31 2 *", "never fires"},
		{"cronie CRON_TZ=Mars/Base 0 0 * * *", `CRON_TZ: unknown time zone "Mars/Base"`},
		{"cronie CRON_TZ= 0 0 * * *", `CRON_TZ: unknown time zone ""`},
		{"cronie CRON_TZ=Local 0 0 * * *", `unknown time zone "Local"`},
		{"CRON_TZ=UTC", "empty cron expression"},
	} {
		expr, flavour := tc.expr, Debian
		if e, ok := strings.CutPrefix(expr, "cronie "); ok {
			expr, flavour = e, Cronie
		}
		_, err := ParseCron(expr, time.UTC, flavour)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCron(%q, Debian) = %v, want error containing %q", tc.expr, err, tc.want)
		}
	}
}

func TestCronRule(t *testing.T) {
	for expr, want := range map[string]dstRule{
		"30 2 * * *":   ruleCronFixed,
		"0,30 1-3 * *": 0, // invalid, skipped
		"*/5 2 * * *":  ruleCronWild,
		"5 * * * *":    ruleCronWild,
		"5 */2 * * *":  ruleCronWild,
		"@hourly":      ruleCronWild,
		"@daily":       ruleCronFixed,
		"0 0 * * *":    ruleCronFixed,
		"0-59 0 * * *": ruleCronFixed, // as cron: only a leading '*' counts
	} {
		z, _, err := parseCron(expr, time.UTC, Debian)
		if err != nil {
			continue
		}
		if z.rule != want {
			t.Errorf("%q: rule %d, want %d", expr, z.rule, want)
		}
	}
}

// TestCronCatchUpRuns: after a jump forward cron runs a fixed-time job once
// for each of its skipped times (and the minute it wakes in), at that
// minute; `jobwatch schedule` shows the count. Checked against Debian's
// cron under faketime (cronoracle_test.go).
func TestCronCatchUpRuns(t *testing.T) {
	cases := []struct {
		name, zone, expr, after string
		want                    string
	}{
		{"issue example: two skipped times", "Europe/Berlin", "15,45 2 * * *", "2027-03-27T23:50:00Z",
			"2027-03-28T03:00:00+02:00 x2\n2027-03-29T02:15:00+02:00\n"},
		{"six skipped times", "Europe/Berlin", "0-59/10 2 * * *", "2027-03-27T23:50:00Z",
			"2027-03-28T03:00:00+02:00 x6\n2027-03-29T02:00:00+02:00\n"},
		{"the minute cron wakes in is one of them", "America/New_York", "0,30 2,3 * * *", "2027-03-14T06:00:00Z",
			"2027-03-14T03:00:00-04:00 x3\n2027-03-14T03:30:00-04:00\n"},
		{"Lord Howe's half-hour jump", "Australia/Lord_Howe", "5,10,40 2 * * *", "2027-10-02T12:00:00Z",
			"2027-10-03T02:30:00+11:00 x2\n2027-10-03T02:40:00+11:00\n"},
		{"one skipped time is one run", "Europe/Berlin", "30 2 * * *", "2027-03-27T23:50:00Z",
			"2027-03-28T03:00:00+02:00\n2027-03-29T02:30:00+02:00\n"},
		{"wildcard job after a jump of an hour: no catch-up", "Europe/Berlin", "*/20 * * * *", "2027-03-28T00:50:00Z",
			"2027-03-28T03:00:00+02:00\n2027-03-28T03:20:00+02:00\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseCron(tc.expr, mustLoc(t, tc.zone), Debian)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := WriteUpcoming(&b, s, mustTime(t, tc.after), 2, nil); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%swant\n%s", b.String(), tc.want)
			}
		})
	}
}

// tzif builds a time zone whose offset is off0 (seconds east of UTC) until
// the instant change and off1 after it.
func tzif(t *testing.T, name string, change time.Time, off0, off1 int32) *time.Location {
	t.Helper()
	var b []byte
	be32 := func(v int32) { b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...)
	for _, n := range []int32{0, 0, 0, 1, 2, 4} { // isut, isstd, leap, time, type, char counts
		be32(n)
	}
	be32(int32(change.Unix()))
	b = append(b, 1)
	be32(off0)
	b = append(b, 0, 0)
	be32(off1)
	b = append(b, 0, 0)
	b = append(b, "XX\x00\x00"...)
	loc, err := time.LoadLocationFromTZData(name, b)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestCronCatchUpSmallJump: a jump forward of at most 4 minutes is cron's
// "woke up late" case: every skipped minute is run, by wildcard jobs too.
func TestCronCatchUpSmallJump(t *testing.T) {
	change := time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		jump    int32
		expr    string
		want    []string
		wantRun []int
	}{
		{"every minute, 3-minute jump", 180, "* * * * *",
			[]string{"2027-06-01T11:59:00Z", "2027-06-01T12:00:00Z", "2027-06-01T12:01:00Z"}, []int{1, 4, 1}},
		{"every minute, 4-minute jump", 240, "* * * * *",
			[]string{"2027-06-01T11:59:00Z", "2027-06-01T12:00:00Z", "2027-06-01T12:01:00Z"}, []int{1, 5, 1}},
		{"every minute, 5-minute jump is not made up", 300, "* * * * *",
			[]string{"2027-06-01T11:59:00Z", "2027-06-01T12:00:00Z", "2027-06-01T12:01:00Z"}, []int{1, 1, 1}},
		{"wildcard hour, skipped minute made up", 180, "1 * * * *",
			[]string{"2027-06-01T11:01:00Z", "2027-06-01T12:00:00Z", "2027-06-01T12:58:00Z"}, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := tzif(t, "Jump", change, 0, tc.jump)
			s, err := ParseCron(tc.expr, loc, Debian)
			if err != nil {
				t.Fatal(err)
			}
			runs := UpcomingRuns(s, mustTime(t, tc.want[0]).Add(-time.Second), len(tc.want))
			for i, r := range runs {
				if got := r.At.UTC().Format(time.RFC3339); got != tc.want[i] || r.Count != tc.wantRun[i] {
					t.Errorf("run %d: %s x%d, want %s x%d", i, got, r.Count, tc.want[i], tc.wantRun[i])
				}
			}
		})
	}
}

// TestCronReadsLikeCron: lines Debian's crontab accepts, read as cron reads
// them (checked against the real cron in cronoracle_test.go), and the
// warning check-config gives for the surprising ones.
func TestCronReadsLikeCron(t *testing.T) {
	after := mustTime(t, "2027-08-01T00:00:00Z") // a Sunday
	for _, tc := range []struct {
		expr, sameAs, warn string
	}{
		{"0 12 1 * 6-0", "0 12 1 * *", `range "6-0" runs backwards`},
		{"0 12 1 * sat-sun", "0 12 1 * *", `range "sat-sun" runs backwards`},
		{"0 12 1 feb-jan,3 *", "0 12 1 3 *", `range "feb-jan" runs backwards`},
		{"5-3,10 * * * *", "10 * * * *", `range "5-3" runs backwards`},
		{"*/5-10 * * * *", "*/5 * * * *", `cron ignores "-10" at the end of "*/5-10" and reads "*/5"`},
		{"1-5-7,30 * * * *", "1-5 * * * *", `cron ignores "-7,30"`},
		{"1-5/2/3 * * * *", "1-5/2 * * * *", `ignores "/3"`},
		{"**/5 * * * *", "* * * * *", `ignores "*/5"`},
		{"*x 2 * * *", "* 2 * * *", `ignores "x"`},
		{"*-5 2 * * *", "* 2 * * *", `ignores "-5"`},
		{"0059 0 * * *", "59 0 * * *", ""},
		{"0 0 * * sun-7", "0 0 * * *", ""},
		{"0 0 * * 0-7/2", "0 0 * * 0,2,4,6", ""},
		{"0 0 * jan-dec/2 *", "0 0 * 1,3,5,7,9,11 *", ""},
		{"0 0 * 1-jan *", "0 0 * 1 *", ""},
		{"0 0 1-31/40 * *", "0 0 1 * *", ""},
		{"*/1000 * * * *", "0 * * * *", ""},
		{"0 0 * * sUn", "0 0 * * 0", ""},
		{"0 0 * * 5#2", "0 0 * * 5", `ignores "#2"`},
		{"0 0 * * 5-6?", "0 0 * * 5,6", `ignores "?"`},
		{"*,5 * * * *", "* * * * *", ""},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			s, err := ParseCron(tc.expr, time.UTC, Debian)
			if err != nil {
				t.Fatal(err)
			}
			same, err := ParseCron(tc.sameAs, time.UTC, Debian)
			if err != nil {
				t.Fatal(err)
			}
			got, want := formatRFC(Upcoming(s, after, 50), time.UTC), formatRFC(Upcoming(same, after, 50), time.UTC)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("runs\n got %v\nwant %v (as %q)", got, want, tc.sameAs)
			}
			w := strings.Join(CronWarnings(tc.expr, time.UTC, Debian), "; ")
			if tc.warn == "" && w != "" || !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
	// The rule of a leading '*' is cron's: "*x 2 * * *" is a wildcard job.
	if z, _, _ := parseCron("*x 2 * * *", time.UTC, Debian); z.rule != ruleCronWild {
		t.Errorf("rule %d, want wildcard", z.rule)
	}
}
