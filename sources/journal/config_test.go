package journal

import (
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources/sourcetest"
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
