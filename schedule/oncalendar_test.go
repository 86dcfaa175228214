package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestOnCalendarDST(t *testing.T) {
	for _, tc := range []struct {
		name, zone string
		exprs      []string
		after      string
		want       []string
	}{
		{"spring gap is skipped", "Europe/Berlin", []string{"*-*-* 02:30:00"}, "2027-03-27T00:00:00Z",
			[]string{"2027-03-27T02:30:00+01:00", "2027-03-29T02:30:00+02:00"}},
		{"repeated hour runs once, first occurrence", "Europe/Berlin", []string{"*:0/30"}, "2027-10-31T00:10:00Z",
			[]string{"2027-10-31T02:30:00+02:00", "2027-10-31T03:00:00+01:00"}},
		{"union of expressions in the job zone", "Europe/Berlin", []string{"Mon 09:00", "*-*-01 00:00 UTC"}, "2027-08-29T00:00:00Z",
			[]string{"2027-08-30T09:00:00+02:00", "2027-09-01T02:00:00+02:00", "2027-09-06T09:00:00+02:00"}},
		{"union drops duplicates", "UTC", []string{"daily", "*-*-* 00:00"}, "2027-08-29T00:00:00Z",
			[]string{"2027-08-30T00:00:00Z", "2027-08-31T00:00:00Z"}},
		{"last day of month", "UTC", []string{"*-*~1 23:00"}, "2027-02-01T00:00:00Z",
			[]string{"2027-02-28T23:00:00Z", "2027-03-31T23:00:00Z", "2027-04-30T23:00:00Z"}},
		{"first Saturday", "UTC", []string{"Sat *-*-1..7 18:00:00"}, "2027-08-01T00:00:00Z",
			[]string{"2027-08-07T18:00:00Z", "2027-09-04T18:00:00Z"}},
		{"timestamp", "Europe/Berlin", []string{"@1800000000"}, "2027-01-01T00:00:00Z",
			[]string{"2027-01-15T08:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := mustLoc(t, tc.zone)
			s, err := ParseOnCalendar(tc.exprs, loc)
			if err != nil {
				t.Fatal(err)
			}
			got := Upcoming(s, mustTime(t, tc.after), len(tc.want))
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Equal(mustTime(t, tc.want[i])) {
					t.Errorf("run %d: got %s, want %s", i, got[i], tc.want[i])
				}
				if got[i].Location() != loc {
					t.Errorf("run %d in %s, want the job's zone %s", i, got[i].Location(), loc)
				}
			}
		})
	}
}

func TestOnCalendarErrors(t *testing.T) {
	for _, tc := range []struct {
		exprs []string
		want  string
	}{
		{nil, "no OnCalendar expression"},
		{[]string{""}, "empty expression"},
		{[]string{"   "}, "empty expression"},
		{[]string{"*-02-30"}, `"*-02-30": never fires`},
		{[]string{"daily", "*-02-30"}, `[1] "*-02-30": never fires`},
		{[]string{"*-*-* 12:00:00.5"}, "fractional seconds are not supported"},
		{[]string{"12:00 Europe/Nowhere"}, `unknown time zone "Europe/Nowhere"`},
		{[]string{"Mo 12:00"}, `unknown weekday "Mo"`},
		{[]string{"Fri..Mon"}, "must run forward"},
		{[]string{"*-*-* 24:00"}, "bad hour"},
		{[]string{"*-13-01"}, "bad month"},
		{[]string{"*:50/15"}, "repetition never repeats"},
		{[]string{"*-*~1/2"}, "repetition leaves the month"},
		{[]string{"*-*-3..1"}, "range ends before it starts"},
		{[]string{"*:0/0"}, "repetition must not be 0"},
		{[]string{"12"}, "bad date"},
		{[]string{"12:00 13:00"}, "after the time"},
		{[]string{"2027~01-01"}, "~ may only come before the day"},
		{[]string{"1969-01-01"}, "out of range 1970-2199"},
		{[]string{"@x"}, "bad timestamp"},
		{[]string{"@99999999999"}, "is after 2199"},
	} {
		_, err := ParseOnCalendar(tc.exprs, time.UTC)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseOnCalendar(%q) = %v, want error containing %q", tc.exprs, err, tc.want)
		}
	}
}

func TestOnCalendarStopsAt2199(t *testing.T) {
	s, err := ParseOnCalendar([]string{"yearly"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(mustTime(t, "2199-01-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("Next = %s, want zero: systemd stops at 2199", got)
	}
}

// TestOnCalendarSystemdGaps: what systemd 252 really does in gaps (issue
// 11), checked against systemd-analyze by TestOnCalendarOracleSweep; here
// as fixed expectations that need no systemd.
func TestOnCalendarSystemdGaps(t *testing.T) {
	for _, tc := range []struct {
		name, zone, expr, after string
		n                       int
		want                    string
	}{
		{"a gap across an hour boundary elapses at the next hour", "Pacific/Chatham", "*:0/15", "2027-09-25T13:10:00Z", 4,
			"2027-09-26T02:00:00+12:45\n2027-09-26T02:15:00+12:45\n2027-09-26T02:30:00+12:45\n2027-09-26T04:00:00+13:45\n"},
		{"an hour in the gap skips the day", "Pacific/Chatham", "*-*-* 03:45", "2027-09-24T00:00:00Z", 2,
			"2027-09-25T03:45:00+12:45\n2027-09-27T03:45:00+13:45\n"},
		{"negative DST: the rest of the change day is skipped", "Europe/Dublin", "*-*-* 1,2,3:0,30", "2027-03-27T03:00:00Z", 2,
			"2027-03-27T03:30:00Z\n2027-03-29T01:00:00+01:00\n"},
		{"Casablanca: the rest of the change day is skipped", "Africa/Casablanca", "*-*-* 00/2:00", "2027-03-13T20:00:00Z", 3,
			"2027-03-13T22:00:00Z\n2027-03-14T00:00:00Z\n2027-03-15T00:00:00+01:00\n"},
		{"Santiago: systemd fails and the timer stops", "America/Santiago", "*-*-* 00/2:00", "2027-09-04T22:00:00Z", 3,
			"2027-09-04T20:00:00-04:00\n2027-09-04T22:00:00-04:00\n# no further run: " + errCalendarLoop.Error() + "\n"},
		{"a local abbreviation forces DST: runs until the change", "Europe/Berlin", "12:00 CEST", "2027-10-29T00:00:00Z", 3,
			"2027-10-29T12:00:00+02:00\n2027-10-30T12:00:00+02:00\n# no further run: " + errNoElapse.Error() + "\n"},
		{"a local abbreviation of the other season never elapses", "Europe/Berlin", "12:00 CEST", "2027-03-26T00:00:00Z", 3,
			"# no further run: " + errNoElapse.Error() + "\n"},
		{"the expression's zone is the one shown", "UTC", "*-*-* 02:30 Europe/Berlin", "2027-03-27T00:00:00Z", 2,
			"2027-03-27T02:30:00+01:00\n2027-03-29T02:30:00+02:00\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseOnCalendar([]string{tc.expr}, mustLoc(t, tc.zone))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := WriteUpcoming(&b, s, mustTime(t, tc.after), tc.n, nil); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%swant\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestOnCalendarWhiteSpaceRejected(t *testing.T) {
	for _, e := range []string{" daily", "daily ", "\tdaily"} {
		if _, err := ParseOnCalendar([]string{e}, time.UTC); err == nil || !strings.Contains(err.Error(), "white space") {
			t.Errorf("%q: %v, want the white space rejected", e, err)
		}
	}
}

func TestWarningsSystemdStops(t *testing.T) {
	from := mustTime(t, "2027-06-01T00:00:00Z")
	w := Spec{OnCalendar: []string{"*-*-* 00/2:00"}, Timezone: "America/Santiago"}.Warnings(nil, from)
	if len(w) != 1 || !strings.Contains(w[0], "Failed to determine next elapse") || !strings.Contains(w[0], "2027-09-05T01:00:00-03:00") {
		t.Errorf("warnings %q", w)
	}
	if w := (Spec{OnCalendar: []string{"*-*-* 00/2:00"}, Timezone: "Europe/Berlin"}).Warnings(nil, from); len(w) != 0 {
		t.Errorf("Berlin: warnings %q", w)
	}
	w = Spec{Cron: "CRON_TZ=Asia/Tokyo 0 12 * * *"}.Warnings(time.UTC, from)
	if len(w) != 1 || !strings.Contains(w[0], `schedule: "CRON_TZ=Asia/Tokyo 0 12 * * *": CRON_TZ=Asia/Tokyo is ignored`) {
		t.Errorf("CRON_TZ: warnings %q", w)
	}
	if w := (Spec{Cron: "CRON_TZ=Asia/Tokyo 0 12 * * *", Flavour: Cronie}).Warnings(time.UTC, from); len(w) != 0 {
		t.Errorf("cronie: warnings %q", w)
	}
}

// TestOnCalendarPrevFollowsSystemd: runs are assigned to the elapses
// systemd has, also where they differ from the calendar's.
func TestOnCalendarPrevFollowsSystemd(t *testing.T) {
	s, err := ParseOnCalendar([]string{"*:0/15"}, mustLoc(t, "Pacific/Chatham"))
	if err != nil {
		t.Fatal(err)
	}
	for at, want := range map[string]string{
		"2027-09-26T04:00:30+13:45": "2027-09-26T04:00:00+13:45",
		"2027-09-26T03:50:00+13:45": "2027-09-26T02:30:00+12:45", // 03:45 is no elapse
		"2027-09-26T04:20:00+13:45": "2027-09-26T04:15:00+13:45",
		"2027-09-26T02:40:00+12:45": "2027-09-26T02:30:00+12:45",
	} {
		if got := s.Prev(mustTime(t, at)).Format(time.RFC3339); got != want {
			t.Errorf("Prev(%s) = %s, want %s", at, got, want)
		}
	}
}
