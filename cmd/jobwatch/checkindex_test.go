package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
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
	testproc.WriteFile(t, cfg, fmt.Sprintf(`
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
		testproc.WriteFile(t, cfg, fmt.Sprintf(`
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
		warned := strings.Contains(stderr, `warning: source "cron": cron_log_level 1: cron -L 1 logs only job starts (CMD): results are not logged`)
		if warned != tc.warn {
			t.Errorf("%q: warned %v, want %v:\n%s", tc.level, warned, tc.warn, stderr)
		}
	}
}

// TestCheckConfigChecksCheckinTable: check-config with checkins.store:
// mysql looks at the table the check-ins are stored in, as the store
// does before its first write: a table without what they need is an
// error naming the checkins block, one without run_id says that retries
// would not be idempotent; a server that cannot be reached is a warning.
func TestCheckConfigChecksCheckinTable(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv := mariadbtest.Start(t)
	for _, tc := range []struct {
		name  string
		alter string // on examples/job_runs.sql's table
		addr  string // the checkins DSN's server; default srv's
		code  int
		want  string // in check-config's stderr; "": nothing of checkins
	}{
		{name: "example table"},
		{name: "column missing", alter: "ALTER TABLE job_runs DROP COLUMN host", code: 1,
			want: "checkins: table job_runs has no column host"},
		{name: "no run_id", alter: "ALTER TABLE job_runs DROP KEY job_run, DROP COLUMN run_id", code: 1,
			want: "checkins: table job_runs has no run_id column: check-ins are refused, as a retried one would not be idempotent"},
		{name: "unreachable", addr: freePort(t),
			want: "warning: checkins: not checked against the server: table job_runs: database unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.JobRunsDatabase(t)
			if tc.alter != "" {
				srv.Exec(t, db, tc.alter)
			}
			store, err := mysql.ParseDSN(srv.RootDSN(db))
			must(t, err)
			if tc.addr != "" {
				store.Addr = tc.addr
			}
			cfg := filepath.Join(t.TempDir(), "jobwatch.yml")
			testproc.WriteFile(t, cfg, fmt.Sprintf(`
jobs:
  - name: backup
    every: 1h
checkins:
  enabled: true
  store: mysql
  mysql_dsn: %q
sources:
  - name: shared
    type: mysql
    dsn: %q
`, store.FormatDSN(), srv.RootDSN(db)))
			code, out := runToExit(t, bin, "check-config", "--config.file="+cfg)
			if code != tc.code || tc.want != "" && !strings.Contains(out, tc.want) || tc.want == "" && strings.Contains(out, "checkins") {
				t.Fatalf("check-config exited %d, want %d, saying %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}
