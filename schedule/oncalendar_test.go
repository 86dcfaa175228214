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
