package model

import (
	"math"
	"testing"
	"time"
)

// A Stamp gives back the time it was made from, in its zone, as the state
// file and the status page write it.
func TestStampRoundTrip(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	at := time.Date(2026, 12, 6, 19, 35, 12, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		in   time.Time
		want string // RFC 3339, as the state file writes it
	}{
		{"UTC", at, "2026-12-06T19:35:12.123456789Z"},
		{"fixed zone of a record", at.In(time.FixedZone("", 3600)), "2026-12-06T20:35:12.123456789+01:00"},
		{"named zone", at.In(berlin), "2026-12-06T20:35:12.123456789+01:00"},
		{"summer time", at.AddDate(0, 6, 0).In(berlin), "2027-06-06T21:35:12.123456789+02:00"},
		{"before 1970", time.Unix(-1, 5).UTC(), "1969-12-31T23:59:59.000000005Z"},
		{"time.Now, monotonic reading and all", time.Now(), ""},
		{"the last nanosecond held", time.Unix(0, math.MaxInt64).UTC(), "2262-04-11T23:47:16.854775807Z"},
		{"after 2262: the latest held", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), "2262-04-11T23:47:16.854775807Z"},
		{"before 1678: the earliest held", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), "1677-09-21T00:12:43.145224192Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := StampOf(tc.in).Time()
			want := tc.want
			if want == "" {
				want = tc.in.Format(time.RFC3339Nano)
			}
			if s := got.Format(time.RFC3339Nano); s != want {
				t.Errorf("%s: got %s, want %s", tc.in, s, want)
			}
			if tc.in.Year() < 1678 || tc.in.Year() > 2262 {
				return
			}
			n1, o1 := got.Zone()
			if n2, o2 := tc.in.Zone(); n1 != n2 || o1 != o2 {
				t.Errorf("zone %s %d, want %s %d", n1, o1, n2, o2)
			}
		})
	}
}

// Local times come back Local, and the zero time as zero; the methods
// compare as time.Time's do.
func TestStampLocalZeroAndCompare(t *testing.T) {
	now := time.Now().Round(0)
	if got := StampOf(now).Time(); got.Location() != time.Local || !got.Equal(now) {
		t.Fatalf("local %s came back %s in %s", now, got, got.Location())
	}
	var zero Stamp
	if StampOf(time.Time{}) != zero || !zero.IsZero() || !zero.Time().IsZero() {
		t.Fatal("the zero time is not the zero Stamp")
	}
	s := StampOf(now)
	if s.IsZero() || !s.Equal(now) || s.Before(now) || s.After(now) ||
		!s.Before(now.Add(1)) || !s.After(now.Add(-1)) || !zero.Before(now) || zero.After(now) {
		t.Fatal("Stamp's Before, After or Equal differ from time.Time's")
	}
}
