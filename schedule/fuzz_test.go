package schedule

import (
	"testing"
	"time"
)

var fuzzBase = time.Date(2027, 3, 27, 23, 59, 30, 0, time.UTC)

func checkFuzzed(t *testing.T, s Schedule, offset int64) {
	at := fuzzBase.Add(time.Duration(offset%(400*24*3600)) * time.Second)
	n := s.Next(at)
	if n.IsZero() {
		return
	}
	if !n.After(at) {
		t.Fatalf("Next(%s) = %s, not after", at, n)
	}
	if p := s.Prev(n); !p.Equal(n) {
		t.Fatalf("Prev(Next(%s)) = %s, want %s", at, p, n)
	}
	if p := s.Prev(n.Add(-time.Second)); !p.IsZero() && !p.Before(n) {
		t.Fatalf("Prev(%s) = %s, not before %s", n.Add(-time.Second), p, n)
	}
	if n2 := s.Next(n); !n2.IsZero() && !n2.After(n) {
		t.Fatalf("Next(%s) = %s, not after", n, n2)
	}
}

func FuzzParseCron(f *testing.F) {
	for _, s := range []string{
		"30 2 * * *", "*/15 * * * *", "0 12 13 * 5", "0 9 * jan-MAR Mon-fri", "@hourly", "@daily",
		"CRON_TZ=Australia/Lord_Howe 15 2 * * *", "0 0 30 2 *", "1-10/3,50 0-23/2 */2 * 0,7",
		"5/10 * * * *", "* * * * * *", "", "@reboot", "0 0 29 2 */7",
	} {
		f.Add(s, int64(0))
		f.Add(s, int64(182*24*3600+3600))
	}
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, offset int64) {
		s, err := ParseCron(expr, loc, Debian)
		if err != nil {
			return
		}
		checkFuzzed(t, s, offset)
	})
}

func FuzzParseOnCalendar(f *testing.F) {
	for _, s := range []string{
		"Mon..Fri 09:00", "*-*-* 02:30:00", "*:0/15", "Sat *-*-1..7 18:00:00", "*-*~1..3 02:30",
		"*-*~7/2", "2027/2-*-01 00:00", "daily", "weekly Europe/Berlin", "hourly UTC", "@1800000000",
		"*-02-30", "*-*-* 12:00:00.5", "Mon,Wed..Fri *-1..12/3-1 8..18/2:0/30:0,30", "27-1-1",
	} {
		f.Add(s, int64(0))
		f.Add(s, int64(218*24*3600+5400))
	}
	loc, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, offset int64) {
		s, err := ParseOnCalendar([]string{expr}, loc)
		if err != nil {
			return
		}
		checkFuzzed(t, s, offset)
	})
}
