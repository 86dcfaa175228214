package runlog

import (
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/internal/testsupport/sourcetest"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
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

// late_window, as every source of runs has it.
func TestLateWindowKey(t *testing.T) {
	sourcetest.LateWindowKey(t, sourcetest.LateWindow{
		Head: "  - name: runs\n    type: runlog\n    path: /var/log/runs.log\n", Name: "runs",
		Valid: []string{"format: json"}, Broken: []string{"format: yaml"}, BrokenErr: `format must be json, logfmt, regex or cron, got "yaml"`,
		Default: DefaultLateWindow,
	})
}
