package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/sources"
)

// check-config warns when the cron read logs runs only in part: at the
// configured cron_log_level, or at /etc/default/cron's -L for the system
// journal with none configured.
func TestCronLevelCheck(t *testing.T) {
	defaults := filepath.Join(t.TempDir(), "cron")
	old := CronDefaultsFile
	CronDefaultsFile = defaults
	t.Cleanup(func() { CronDefaultsFile = old })
	level := func(n int) *int { return &n }
	for _, tc := range []struct {
		name     string
		level    *int
		dir      bool
		defaults string
		want     string
	}{
		{"configured 15", level(15), false, "", ""},
		{"configured 1", level(1), false, "", "cron -L 1 logs only job starts (CMD): results are not logged"},
		{"configured 3", level(3), true, "", "cron -L 3 logs no failures"},
		{"system journal, stock Debian", nil, false, "#EXTRA_OPTS=\"\"\n", "cron -L 1 logs only job starts (CMD): results are not logged, so each run ends with result unknown once its process is gone (EXTRA_OPTS of " + defaults + ")"},
		{"system journal, -L 15", nil, false, "EXTRA_OPTS=\"-L 15\"\n", ""},
		{"a directory: another machine's cron", nil, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(defaults, []byte(tc.defaults), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Cron: []CronMatch{{Match: "x", Job: "x"}}, CronLogLevel: tc.level}
			if tc.dir {
				cfg.Directory = t.TempDir()
			}
			j, err := New("j", cfg, sources.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			err = j.Check(context.Background())
			var w sources.Warning
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v, want no warning", err)
			case tc.want != "" && (!errors.As(err, &w) || !strings.Contains(string(w), tc.want) || !strings.Contains(string(w), `EXTRA_OPTS="-L 15"`)):
				t.Errorf("%v, want a warning saying %q and the fix", err, tc.want)
			}
		})
	}
}
