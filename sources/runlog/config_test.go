package runlog

import (
	"strings"
	"testing"
	"time"

	"jobwatch/config"
	"jobwatch/sources"
	"jobwatch/sources/runlog/record"
)

func TestValidateCron(t *testing.T) {
	jobs := map[string]bool{"backup": true}
	level := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		c    record.Config
		want []string
	}{
		{"ok", record.Config{Format: "cron", Commands: []record.Command{{Match: `backup\.sh`, Job: "backup"}}, CronLogLevel: level(15)}, nil},
		{"no commands is fine", record.Config{Format: "cron"}, nil},
		{"commands of another format", record.Config{Format: "json", Commands: []record.Command{{Match: "x", Job: "backup"}}, CronLogLevel: level(1)},
			[]string{"commands are only for format cron", "cron_log_level is only for format cron"}},
		{"bad entries", record.Config{Format: "cron", Commands: []record.Command{{Match: "(", Job: "backup"}, {Match: "x", Job: "nope"}, {Match: "", Job: ""}}},
			[]string{"commands[0].match: error parsing regexp", `commands[1].job: unknown job "nope"`, "commands[2].match is required", "commands[2].job is required"}},
		{"level out of range", record.Config{Format: "cron", CronLogLevel: level(16)}, []string{"cron_log_level must be 0 to 15"}},
		{"patterns and time_format", record.Config{Format: "cron", TimeFormat: "2006", Patterns: []record.Pattern{{Regex: `(?P<time>\S+) (?P<job>\w+) (?P<event>\w+)`}}},
			[]string{"patterns are only for format regex", "time_format is not for format cron"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Path: "/var/log/cron.log", Config: tc.c}
			var got []string
			for _, err := range c.validate(jobs) {
				got = append(got, err.Error())
			}
			all := strings.Join(got, "\n")
			if len(got) != len(tc.want) {
				t.Errorf("errors:\n%s\nwant %d", all, len(tc.want))
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no error saying %q in:\n%s", w, all)
				}
			}
		})
	}
}

// late_window is parsed, defaulted and refused when negative, a refusal
// reported with the block's other errors.
func TestLateWindowKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block []string // the block's keys besides name, type and path
		want  time.Duration
		errs  []string
	}{
		{"default", []string{"format: json"}, DefaultLateWindow, nil},
		{"zero is the default", []string{"format: json", "late_window: 0s"}, DefaultLateWindow, nil},
		{"set", []string{"format: json", "late_window: 30s"}, 30 * time.Second, nil},
		{"Prometheus syntax", []string{"format: json", "late_window: 1m"}, time.Minute, nil},
		{"negative", []string{"format: json", "late_window: -1s"}, 0, []string{"late_window must not be negative"}},
		{"negative, with another error", []string{"format: yaml", "late_window: -1s"}, 0,
			[]string{"late_window must not be negative", `format must be json, logfmt, regex or cron, got "yaml"`}},
		{"not a duration", []string{"format: json", "late_window: soon"}, 0, []string{`line 7: bad duration "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := "jobs: [{name: a, every: 1h}]\nsources:\n  - name: runs\n    type: runlog\n    path: /var/log/runs.log\n    " +
				strings.Join(tc.block, "\n    ") + "\n"
			cfg, err := config.Parse(strings.NewReader(yml))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("accepted:\n%s", yml)
				}
				for _, w := range tc.errs {
					if !strings.Contains(err.Error(), `source "runs": `+w) {
						t.Errorf("no error of the source saying %q in:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var rr sources.RunReporter = cfg.Sources[0].Config.(*Config)
			if got := rr.LateWindow(); got != tc.want {
				t.Errorf("LateWindow() = %v, want %v", got, tc.want)
			}
		})
	}
}
