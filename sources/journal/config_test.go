package journal

import (
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/testsupport/sourcetest"
)

func TestJournalUnitNames(t *testing.T) {
	tests := []struct {
		unit    string
		wantErr bool
	}{
		{"stats.service", false},
		{"backup@home.service", false},
		{"stats.timer", true},
		{"stats", true},
		{".service", true},
		{"a b.service", true},
		{"UNIT=x.service", true},
	}
	for _, tc := range tests {
		t.Run(tc.unit, func(t *testing.T) {
			yml := "jobs: [{name: a, every: 1h}]\nsources: [{name: j, type: journal, units: {'" + tc.unit + "': a}}]\n"
			_, err := config.Parse(strings.NewReader(yml))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse: %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "must be a service unit name") {
				t.Errorf("error %q does not say what a unit name must be", err)
			}
		})
	}
}

// late_window, as every source of runs has it.
func TestLateWindowKey(t *testing.T) {
	sourcetest.LateWindowKey(t, sourcetest.LateWindow{
		Head: "  - name: j\n    type: journal\n    directory: /var/log/journal\n", Name: "j",
		Valid: []string{"units: {a.service: a}"}, BrokenErr: "needs units or cron",
		Default: DefaultLateWindow,
	})
}

// cron_log_level: cron's -L, 0 to 15, for cron matches only.
func TestCronLogLevelKey(t *testing.T) {
	for _, tc := range []struct {
		src, err string
	}{
		{"cron: [{match: x, job: a}], cron_log_level: 15", ""},
		{"cron: [{match: x, job: a}], cron_log_level: 16", "cron_log_level must be 0 to 15"},
		{"units: {a.service: a}, cron_log_level: 15", "cron_log_level is only for cron"},
	} {
		yml := "jobs: [{name: a, every: 1h}]\nsources: [{name: j, type: journal, " + tc.src + "}]\n"
		_, err := config.Parse(strings.NewReader(yml))
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}
