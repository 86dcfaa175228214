package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduleAndCheckConfigDST runs the real binary: jobwatch schedule
// shows cron's catch-up runs with their count and an OnCalendar job in its
// expression's zone, and check-config warns about a CRON_TZ Debian's cron
// ignores and a timer systemd stops (issue 11).
func TestScheduleAndCheckConfigDST(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	if err := os.WriteFile(cfg, []byte(`
jobs:
  - name: twice
    schedule: "15,45 2 * * *"
    timezone: Europe/Berlin
  - name: tokyo
    schedule: "CRON_TZ=Asia/Tokyo 0 12 * * *"
    timezone: UTC
  - name: timer
    on_calendar: "*-*-* 02:30 Europe/Berlin"
    timezone: UTC
  - name: santiago
    on_calendar: "*-*-* 00/2:00"
    timezone: America/Santiago
sources:
  - name: runs
    type: runlog
    path: runs.log
    format: json
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ job, after, want string }{
		{"twice", "2027-03-27T23:50:00Z", "2027-03-28T03:00:00+02:00 x2\n2027-03-29T02:15:00+02:00\n"},
		{"tokyo", "2027-08-01T00:00:00Z", "2027-08-01T12:00:00Z\n2027-08-02T12:00:00Z\n"},
		{"timer", "2027-03-27T00:00:00Z", "2027-03-27T02:30:00+01:00\n2027-03-29T02:30:00+02:00\n"},
		{"santiago", "2027-09-05T01:30:00Z", "2027-09-04T22:00:00-04:00\n# no further run: "},
	} {
		out, err := exec.Command(bin, "schedule", "--config.file="+cfg, "--job="+tc.job, "--after="+tc.after, "--count=2").CombinedOutput()
		if err != nil {
			t.Fatalf("schedule --job=%s: %v\n%s", tc.job, err, out)
		}
		if !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("schedule --job=%s:\n%s\nwant\n%s", tc.job, out, tc.want)
		}
	}
	out, err := exec.Command(bin, "check-config", "--config.file="+cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	for _, want := range []string{
		`warning: job "tokyo": schedule: "CRON_TZ=Asia/Tokyo 0 12 * * *": CRON_TZ=Asia/Tokyo is ignored by Debian's cron`,
		`warning: job "santiago": on_calendar: "*-*-* 00/2:00": systemd 252 fails to compute the next elapse`,
		"4 jobs, 1 source: OK",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `job "twice"`) || strings.Contains(string(out), `job "timer"`) {
		t.Errorf("check-config warns about a job it should not:\n%s", out)
	}
}
