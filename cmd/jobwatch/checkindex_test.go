package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/internal/mariadbtest"
)

// TestCheckConfigWarnsOfMissingIndexes: check-config on a mysql source
// whose table has no index by job succeeds with a warning naming the source
// and the index to create.
func TestCheckConfigWarnsOfMissingIndexes(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	ddl, err := os.ReadFile(filepath.Join("..", "..", "examples", "job_runs.sql"))
	must(t, err)
	srv.Exec(t, db, string(ddl))
	srv.Exec(t, db, "ALTER TABLE job_runs DROP KEY job_status_finished, DROP KEY job_open")
	cfg := filepath.Join(t.TempDir(), "jobwatch.yml")
	writeConfig(t, cfg, fmt.Sprintf(`
jobs:
  - name: stats
    every: 1h
sources:
  - name: billing-db
    type: mysql
    dsn: %q
`, srv.RootDSN(db)))
	code, stderr := runToExit(t, bin, "check-config", "--config.file="+cfg)
	if code != 0 {
		t.Fatalf("check-config exited %d:\n%s", code, stderr)
	}
	for _, want := range []string{`warning: source "billing-db": table`, "CREATE INDEX job_status_finished ON `job_runs` (job_name, status, finished_at)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check-config's output lacks %q:\n%s", want, stderr)
		}
	}
}

// TestCheckConfigWarnsOfCronLevel: check-config on a format cron source at
// Debian's default level succeeds and warns that its jobs can only be seen
// starting; at -L 15 it says nothing.
func TestCheckConfigWarnsOfCronLevel(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, tc := range []struct {
		level string
		warn  bool
	}{{"", true}, {"cron_log_level: 15", false}} {
		cfg := filepath.Join(t.TempDir(), "jobwatch.yml")
		writeConfig(t, cfg, fmt.Sprintf(`
jobs:
  - name: backup
    every: 1h
sources:
  - name: cron
    type: runlog
    path: /var/log/cron.log
    format: cron
    %s
    commands:
      - match: 'backup\.sh'
        job: backup
`, tc.level))
		code, stderr := runToExit(t, bin, "check-config", "--config.file="+cfg)
		if code != 0 {
			t.Fatalf("check-config exited %d:\n%s", code, stderr)
		}
		warned := strings.Contains(stderr, `warning: source "cron": cron_log_level 1: cron logs only job starts (CMD), so every job can only ever be seen starting`)
		if warned != tc.warn {
			t.Errorf("%q: warned %v, want %v:\n%s", tc.level, warned, tc.warn, stderr)
		}
	}
}
