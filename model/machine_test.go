package model

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// TestMachineAlone drives one job's state machine without a Tracker or an
// orderer: records held in the job, in any order, then one decision up to
// a time. What it decides depends on the records and that time alone.
func TestMachineAlone(t *testing.T) {
	hourly, err := schedule.ParseCron("0 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	at := func(hhmmss string) time.Time {
		v, err := time.Parse(time.DateTime, "2026-12-01 "+hhmmss)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	start := Event{Kind: Start, Job: "backup", Host: "a", PID: 7, Time: at("10:00:30")}
	end := Event{Kind: End, Job: "backup", Host: "a", PID: 7, Time: at("10:00:40"), Result: Success, HasExitCode: true}
	spec := JobSpec{Name: "backup", Schedule: hourly, Grace: 5 * time.Minute, Scope: "host"}
	withTimeout := spec
	withTimeout.Timeout = time.Minute
	cases := []struct {
		name    string
		spec    JobSpec
		records []Event
		to      string
		want    string
	}{
		{"a run in its slot", spec, []Event{start, end}, "10:10:00",
			"success=1 lost=0 missed=0 open=0 held=0 last_success=10:00:40 duration=10s"},
		{"its end read before its start", spec, []Event{end, start}, "10:10:00",
			"success=1 lost=0 missed=0 open=0 held=0 last_success=10:00:40 duration=10s"},
		{"slots with no run", spec, nil, "11:10:00",
			"success=0 lost=0 missed=2 open=0 held=0 last_success=- duration=-"},
		{"a run past its timeout", withTimeout, []Event{start}, "10:05:00",
			"success=0 lost=1 missed=0 open=0 held=0 last_success=- duration=-"},
		{"decided before the records", spec, []Event{start, end}, "10:00:00",
			"success=0 lost=0 missed=0 open=0 held=2 last_success=- duration=-"},
		{"decided between start and end", spec, []Event{end, start}, "10:00:35",
			"success=0 lost=0 missed=0 open=1 held=1 last_success=- duration=-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := machine{host: "here", logger: slog.New(slog.DiscardHandler),
				window:   func(string) time.Duration { return 0 },
				repeated: func(source string) { t.Errorf("a record of %s counted as repeated", source) }}
			j := newJob(at("09:59:00"))
			j.configure(&tc.spec, at("09:59:00"))
			for i := range tc.records {
				j.held.add(&tc.records[i], "log")
			}
			j.held.sort()
			m.decide(j, at(tc.to), at(tc.to))
			if got := machineSummary(j); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// machineSummary is what a job's state machine decided, in one line.
func machineSummary(j *job) string {
	last, dur := "-", "-"
	if !j.LastSuccess.IsZero() {
		last = j.LastSuccess.Time().Format(time.TimeOnly)
	}
	if j.HasLastDuration {
		dur = fmt.Sprint(time.Duration(j.LastDuration * float64(time.Second)))
	}
	return fmt.Sprintf("success=%d lost=%d missed=%d open=%d held=%d last_success=%s duration=%s",
		j.RunCounts[slices.Index(Results, Success)], j.RunCounts[slices.Index(Results, Lost)], j.Missed,
		len(j.runs.open), len(j.held.list), last, dur)
}
