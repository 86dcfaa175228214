package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	after := mustTime(t, "2027-08-01T00:00:00Z")
	for _, tc := range []struct {
		name string
		spec Spec
		loc  string // zone of the schedule, "" for Every
		next string
	}{
		{"every", Spec{Every: time.Hour}, "", "2027-08-01T01:00:00Z"},
		{"cron in local zone", Spec{Cron: "0 9 * * *"}, "Europe/Berlin", "2027-08-01T09:00:00+02:00"},
		{"cron in job zone", Spec{Cron: "0 9 * * *", Timezone: "America/New_York"}, "America/New_York", "2027-08-01T09:00:00-04:00"},
		{"cronie: CRON_TZ wins", Spec{Cron: "CRON_TZ=Asia/Shanghai 0 9 * * *", Timezone: "America/New_York", Flavour: Cronie}, "Asia/Shanghai", "2027-08-01T09:00:00+08:00"},
		{"debian: CRON_TZ is ignored", Spec{Cron: "CRON_TZ=Asia/Shanghai 0 9 * * *", Timezone: "America/New_York"}, "America/New_York", "2027-08-01T09:00:00-04:00"},
		{"debian named: CRON_TZ is ignored", Spec{Cron: "CRON_TZ=Asia/Shanghai 0 9 * * *", Flavour: Debian}, "Europe/Berlin", "2027-08-01T09:00:00+02:00"},
		{"on_calendar in job zone", Spec{OnCalendar: []string{"09:00"}, Timezone: "UTC"}, "UTC", "2027-08-01T09:00:00Z"},
		{"on_calendar zone suffix wins and is shown", Spec{OnCalendar: []string{"09:00 Asia/Shanghai"}, Timezone: "UTC"}, "Asia/Shanghai", "2027-08-01T01:00:00Z"},
		{"on_calendar zones differ: the job's is shown", Spec{OnCalendar: []string{"09:00 Asia/Shanghai", "10:00"}, Timezone: "UTC"}, "UTC", "2027-08-01T01:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.spec, berlin)
			if err != nil {
				t.Fatal(err)
			}
			if z, ok := s.(Zoned); ok != (tc.loc != "") || ok && z.Location().String() != tc.loc {
				t.Errorf("zone: %T %v, want %q", s, s, tc.loc)
			}
			if got := s.Next(after); !got.Equal(mustTime(t, tc.next)) {
				t.Errorf("Next = %s, want %s", got, tc.next)
			}
			if errs := tc.spec.Check(); len(errs) != 0 {
				t.Errorf("Check = %v", errs)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string // New's error contains all; Check returns one error each
	}{
		{"no kind", Spec{}, nil},
		{"two kinds", Spec{Every: time.Hour, Cron: "@daily"}, nil},
		{"bad cron", Spec{Cron: "0 0 30 2 *"}, []string{`schedule: "0 0 30 2 *": never fires`}},
		{"bad field", Spec{Cron: "0 25 * * *"}, []string{`schedule: "0 25 * * *": hour: 25 out of range 0-23`}},
		{"one bad on_calendar", Spec{OnCalendar: []string{"*-02-30"}}, []string{`on_calendar: "*-02-30": never fires`}},
		{"bad on_calendar entries", Spec{OnCalendar: []string{"daily", "*-02-30", "Mo"}},
			[]string{`on_calendar[1]: "*-02-30": never fires`, `on_calendar[2]: "Mo": unknown weekday "Mo"`}},
		{"bad timezone", Spec{Cron: "@daily", Timezone: "Mars/Base"}, []string{`timezone: unknown time zone "Mars/Base"`}},
		{"timezone with every", Spec{Every: time.Hour, Timezone: "UTC"}, []string{"timezone: applies only to schedule and on_calendar"}},
		{"unknown flavour", Spec{Cron: "@daily", Flavour: "vixie"}, []string{`cron: unknown cron flavour "vixie"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.spec, time.UTC)
			if err == nil {
				t.Fatal("New accepted")
			}
			if tc.want == nil {
				if !strings.Contains(err.Error(), "exactly one of every, schedule and on_calendar") {
					t.Errorf("New = %v", err)
				}
				if errs := tc.spec.Check(); len(errs) != 0 {
					t.Errorf("Check repeats the kind check: %v", errs)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New = %v, want %q", err, w)
				}
			}
			errs := tc.spec.Check()
			if len(errs) != len(tc.want) {
				t.Fatalf("Check = %v, want %d errors", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("Check[%d] = %v, want %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestCheckChecksEveryKindSet(t *testing.T) {
	errs := Spec{Cron: "bad", OnCalendar: []string{"bad"}}.Check()
	if len(errs) != 2 {
		t.Fatalf("Check = %v, want errors for schedule and on_calendar", errs)
	}
	if !errors.Is(errs[0], errs[0]) || !strings.HasPrefix(errs[0].Error(), "schedule: ") || !strings.HasPrefix(errs[1].Error(), "on_calendar: ") {
		t.Errorf("Check = %v", errs)
	}
}
