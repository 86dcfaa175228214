package discover

import "testing"

// A host whose cron logs at -L 15 has no cron_log_level finding, and its
// journal source says 15; at Debian's default it has one.
func TestCronLevelFinding(t *testing.T) {
	for _, tc := range []struct {
		defaults string
		level    int
		finding  bool
	}{
		{"", 1, true},
		{"EXTRA_OPTS=\"-L 15\"\n", 15, false},
		{"EXTRA_OPTS=\"-L 3\"\n", 3, true},
	} {
		files := map[string]string{"/etc/cron.d/job": "0 1 * * * root /usr/local/bin/backup\n", "/etc/debian_version": "12\n",
			"/etc/systemd/system/.keep": "", "/usr/local/bin/backup": "#!/bin/sh\n"}
		if tc.defaults != "" {
			files[CronDefaults] = tc.defaults
		}
		h := readBounded(t, writeTree(t, files))
		if h.CronLogLevel != tc.level {
			t.Errorf("%q: level %d, want %d", tc.defaults, h.CronLogLevel, tc.level)
		}
		found := false
		for _, f := range Check(h, Options{Now: now}) {
			found = found || f.Kind == KindCronLevel
		}
		if found != tc.finding {
			t.Errorf("%q: finding %v, want %v", tc.defaults, found, tc.finding)
		}
	}
}
