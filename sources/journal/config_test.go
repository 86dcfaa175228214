package journal

import (
	"strings"
	"testing"
	"time"

	"jobwatch/config"
	"jobwatch/sources"
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

// late_window is parsed, defaulted and refused when negative, a refusal
// reported with the block's other errors.
func TestLateWindowKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block []string // the block's keys besides name, type and directory
		want  time.Duration
		errs  []string
	}{
		{"default", []string{"units: {a.service: a}"}, DefaultLateWindow, nil},
		{"zero is the default", []string{"units: {a.service: a}", "late_window: 0s"}, DefaultLateWindow, nil},
		{"set", []string{"units: {a.service: a}", "late_window: 15s"}, 15 * time.Second, nil},
		{"Prometheus syntax", []string{"units: {a.service: a}", "late_window: 2m"}, 2 * time.Minute, nil},
		{"negative", []string{"units: {a.service: a}", "late_window: -2s"}, 0, []string{"late_window must not be negative"}},
		{"negative, with another error", []string{"late_window: -2s"}, 0, []string{"late_window must not be negative", "needs units or cron"}},
		{"not a duration", []string{"units: {a.service: a}", "late_window: soon"}, 0, []string{`line 7: bad duration "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := "jobs: [{name: a, every: 1h}]\nsources:\n  - name: j\n    type: journal\n    directory: /var/log/journal\n    " +
				strings.Join(tc.block, "\n    ") + "\n"
			cfg, err := config.Parse(strings.NewReader(yml))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("accepted:\n%s", yml)
				}
				for _, w := range tc.errs {
					if !strings.Contains(err.Error(), `source "j": `+w) {
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
