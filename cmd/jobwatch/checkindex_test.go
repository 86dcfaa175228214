package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"jobwatch/internal/mariadbtest"
)

// TestCheckConfigWarnsOfMissingIndexes: check-config on a mysql source
// whose table has no index by job succeeds with a warning naming the source
// and the index to create.
func TestCheckConfigWarnsOfMissingIndexes(t *testing.T) {
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
