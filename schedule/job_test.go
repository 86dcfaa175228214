package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"jobwatch/config"
)

func TestFromJob(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	after := mustTime(t, "2027-08-01T00:00:00Z")
	for _, tc := range []struct {
		name string
		job  config.Job
		loc  string // zone of the schedule, "" for Every
		next string
	}{
		{"every", config.Job{Every: config.Duration(time.Hour)}, "", "2027-08-01T01:00:00Z"},
		{"cron in local zone", config.Job{Schedule: "0 9 * * *"}, "Europe/Berlin", "2027-08-01T09:00:00+02:00"},
		{"cron in job zone", config.Job{Schedule: "0 9 * * *", Timezone: "America/New_York"}, "America/New_York", "2027-08-01T09:00:00-04:00"},
		{"cronie: CRON_TZ wins", config.Job{Schedule: "CRON_TZ=Asia/Shanghai 0 9 * * *", Timezone: "America/New_York", Cron: "cronie"}, "Asia/Shanghai", "2027-08-01T09:00:00+08:00"},
		{"debian: CRON_TZ is ignored", config.Job{Schedule: "CRON_TZ=Asia/Shanghai 0 9 * * *", Timezone: "America/New_York"}, "America/New_York", "2027-08-01T09:00:00-04:00"},
		{"debian named: CRON_TZ is ignored", config.Job{Schedule: "CRON_TZ=Asia/Shanghai 0 9 * * *", Cron: "debian"}, "Europe/Berlin", "2027-08-01T09:00:00+02:00"},
		{"on_calendar in job zone", config.Job{OnCalendar: config.StringSet{"09:00"}, Timezone: "UTC"}, "UTC", "2027-08-01T09:00:00Z"},
		{"on_calendar zone suffix wins and is shown", config.Job{OnCalendar: config.StringSet{"09:00 Asia/Shanghai"}, Timezone: "UTC"}, "Asia/Shanghai", "2027-08-01T01:00:00Z"},
		{"on_calendar zones differ: the job's is shown", config.Job{OnCalendar: config.StringSet{"09:00 Asia/Shanghai", "10:00"}, Timezone: "UTC"}, "UTC", "2027-08-01T01:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromJob(tc.job, berlin)
			if err != nil {
				t.Fatal(err)
			}
			if z, ok := s.(Zoned); ok != (tc.loc != "") || ok && z.Location().String() != tc.loc {
				t.Errorf("zone: %T %v, want %q", s, s, tc.loc)
			}
			if got := s.Next(after); !got.Equal(mustTime(t, tc.next)) {
				t.Errorf("Next = %s, want %s", got, tc.next)
			}
			if errs := Validate(tc.job); len(errs) != 0 {
				t.Errorf("Validate = %v", errs)
			}
		})
	}
}

func TestFromJobErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  config.Job
		want []string // FromJob's error contains all; Validate returns one error each
	}{
		{"no kind", config.Job{}, nil},
		{"two kinds", config.Job{Every: config.Duration(time.Hour), Schedule: "@daily"}, nil},
		{"bad cron", config.Job{Schedule: "0 0 30 2 *"}, []string{`schedule: "0 0 30 2 *": never fires`}},
		{"bad field", config.Job{Schedule: "0 25 * * *"}, []string{`schedule: "0 25 * * *": hour: 25 out of range 0-23`}},
		{"one bad on_calendar", config.Job{OnCalendar: config.StringSet{"*-02-30"}}, []string{`on_calendar: "*-02-30": never fires`}},
		{"bad on_calendar entries", config.Job{OnCalendar: config.StringSet{"daily", "*-02-30", "Mo"}},
			[]string{`on_calendar[1]: "*-02-30": never fires`, `on_calendar[2]: "Mo": unknown weekday "Mo"`}},
		{"bad timezone", config.Job{Schedule: "@daily", Timezone: "Mars/Base"}, []string{`timezone: unknown time zone "Mars/Base"`}},
		{"timezone with every", config.Job{Every: config.Duration(time.Hour), Timezone: "UTC"}, []string{"timezone: applies only to schedule and on_calendar"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromJob(tc.job, time.UTC)
			if err == nil {
				t.Fatal("FromJob accepted")
			}
			if tc.want == nil {
				if !strings.Contains(err.Error(), "exactly one of every, schedule and on_calendar") {
					t.Errorf("FromJob = %v", err)
				}
				if errs := Validate(tc.job); len(errs) != 0 {
					t.Errorf("Validate repeats the kind check: %v", errs)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FromJob = %v, want %q", err, w)
				}
			}
			errs := Validate(tc.job)
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate = %v, want %d errors", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("Validate[%d] = %v, want %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestValidateChecksEveryKindSet(t *testing.T) {
	errs := Validate(config.Job{Schedule: "bad", OnCalendar: config.StringSet{"bad"}})
	if len(errs) != 2 {
		t.Fatalf("Validate = %v, want errors for schedule and on_calendar", errs)
	}
	if !errors.Is(errs[0], errs[0]) || !strings.HasPrefix(errs[0].Error(), "schedule: ") || !strings.HasPrefix(errs[1].Error(), "on_calendar: ") {
		t.Errorf("Validate = %v", errs)
	}
}
