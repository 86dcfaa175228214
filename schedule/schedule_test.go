package schedule

import (
	"bytes"
	"testing"
	"time"
)

// The example of the `jobwatch schedule` command in the issue.
func TestWriteUpcomingIssueExample(t *testing.T) {
	s, err := ParseCron("30 2 * * *", mustLoc(t, "Europe/Berlin"), Debian)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteUpcoming(&b, s, mustTime(t, "2027-03-27T00:00:00Z"), 3, time.UTC); err != nil {
		t.Fatal(err)
	}
	want := "2027-03-27T02:30:00+01:00\n2027-03-28T03:00:00+02:00\n2027-03-29T02:30:00+02:00\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteUpcomingEveryUsesFallbackZone(t *testing.T) {
	var b bytes.Buffer
	ny := mustLoc(t, "America/New_York")
	if err := WriteUpcoming(&b, Every(90*time.Minute), mustTime(t, "2027-03-14T05:00:00Z"), 3, ny); err != nil {
		t.Fatal(err)
	}
	want := "2027-03-14T01:30:00-05:00\n2027-03-14T04:00:00-04:00\n2027-03-14T05:30:00-04:00\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestEvery(t *testing.T) {
	e := Every(5 * time.Minute)
	at := mustTime(t, "2027-03-28T00:59:00Z")
	if got := e.Next(at); !got.Equal(at.Add(5 * time.Minute)) {
		t.Errorf("Next = %s", got)
	}
	if got := e.Prev(at); !got.Equal(at) {
		t.Errorf("Prev = %s, want t itself", got)
	}
	if got := Upcoming(e, at, 3); len(got) != 3 || !got[2].Equal(at.Add(15*time.Minute)) {
		t.Errorf("Upcoming = %v", got)
	}
	if e.String() != "every 5m0s" {
		t.Errorf("String = %q", e.String())
	}
}

func TestUpcomingStopsAtEnd(t *testing.T) {
	s, err := ParseOnCalendar([]string{"2027-06-01 12:00", "2027-06-02 12:00"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := Upcoming(s, mustTime(t, "2027-01-01T00:00:00Z"), 5); len(got) != 2 {
		t.Errorf("Upcoming = %v, want the 2 runs there are", got)
	}
	if got := Upcoming(s, mustTime(t, "2027-01-01T00:00:00Z"), 0); got != nil {
		t.Errorf("Upcoming(0) = %v", got)
	}
	if got := s.Next(mustTime(t, "2027-06-02T12:00:00Z")); !got.IsZero() {
		t.Errorf("Next after the last run = %s, want zero", got)
	}
	if got := s.Prev(mustTime(t, "2027-06-01T11:59:59Z")); !got.IsZero() {
		t.Errorf("Prev before the first run = %s, want zero", got)
	}
	if got := s.Prev(mustTime(t, "2030-01-01T00:00:00Z")); !got.Equal(mustTime(t, "2027-06-02T12:00:00Z")) {
		t.Errorf("Prev = %s", got)
	}
}

func TestHorizon(t *testing.T) {
	// Feb 29 at midnight that is a Sunday: 2032, then 2060.
	s, err := ParseCron("0 0 29 2 */7", time.UTC, Debian)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(mustTime(t, "2028-01-01T00:00:00Z")); !got.Equal(mustTime(t, "2032-02-29T00:00:00Z")) {
		t.Errorf("Next = %s", got)
	}
	if got := s.Next(mustTime(t, "2032-03-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("Next beyond the horizon = %s, want zero", got)
	}
	if got := s.Prev(mustTime(t, "2040-01-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("Prev beyond the horizon = %s, want zero", got)
	}
}

// Go's ZoneBounds ends the rule-based period of December 31 of a leap year
// a day early; Next and Prev must still walk across it.
func TestLeapYearEndBeyondZoneFile(t *testing.T) {
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"} {
		loc := mustLoc(t, zone)
		for _, mk := range []func() (*zoned, error){
			func() (*zoned, error) { z, _, err := parseCron("15 */6 * * *", loc, Debian); return z, err },
			func() (*zoned, error) { return parseOnCalendar("*-*-* 00/6:15", loc) },
		} {
			z, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			from := time.Date(2040, 12, 1, 0, 0, 0, 0, time.UTC)
			end := time.Date(2041, 2, 1, 0, 0, 0, 0, time.UTC)
			prev := z.Prev(from)
			n := 0
			for r := z.Next(from); r.Before(end); r = z.Next(r) {
				if !r.After(prev) || r.Sub(prev) > 7*time.Hour {
					t.Fatalf("%s %s: run %s after %s", zone, z.expr, r, prev)
				}
				if p := z.Prev(r.Add(-time.Second)); !p.Equal(prev) {
					t.Fatalf("%s %s: Prev(%s) = %s, want %s", zone, z.expr, r.Add(-time.Second), p, prev)
				}
				prev = r
				n++
			}
			if n < 4*61 {
				t.Errorf("%s %s: %d runs in 62 days", zone, z.expr, n)
			}
		}
	}
}
