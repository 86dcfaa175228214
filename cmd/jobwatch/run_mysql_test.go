package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/wrapper"
	"github.com/jobwatch/jobwatch/wrapper/remote"
)

// TestRunRecordMySQLExported: jobwatch run --record-mysql on two hosts
// writes one job_runs table, and jobwatch's mysql source reads it back: both
// hosts' runs, the skip on the first host, and the runs of one slot on two
// hosts at once (an overlap, and a multi-host duplicate of a cluster job).
func TestRunRecordMySQLExported(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	sqlText, err := os.ReadFile("../../examples/job_runs.sql")
	if err != nil {
		t.Fatal(err)
	}
	create := string(sqlText)
	create = create[strings.Index(create, "CREATE TABLE"):]
	srv.Exec(t, db, create[:strings.Index(create, ";")])
	dsn := srv.RootDSN(db)
	admin := srv.DB(t, db)

	dir := t.TempDir()
	bin := buildBinary(t)
	cfg := filepath.Join(dir, "jobwatch.yml")
	os.WriteFile(cfg, fmt.Appendf(nil, `jobs:
  - name: nightly
    schedule: "* * * * *"
    grace: 50s
    scope: cluster
sources:
  - name: db
    type: mysql
    dsn: %q
    poll_interval: 100ms
    late_window: 2s
`, dsn), 0o600)
	// The source reads rows as they come (its first start reads only each
	// job's latest runs): it is running before the wrappers write.
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	release := filepath.Join(dir, "release")
	// Every run of the test lies in one slot of a minutely job: the
	// wrappers' clock starts now, in the first 40 s of a minute, a second a
	// record, so rows are read within the source's late window of their
	// time (a row dated an hour ago, read once the source was at its end,
	// would be late, and not judged against the runs around it).
	testproc.WaitUntil(t, minWait, "the first 40 s of a minute", func() bool { return time.Now().Second() < 40 })
	base := time.Now().UTC()
	var clockMu sync.Mutex
	tick := 0
	now := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		tick++
		return base.Add(time.Duration(tick) * time.Second)
	}
	run := func(host string, command ...string) (int, string) {
		var stderr bytes.Buffer
		code := wrapper.Run(wrapper.Options{
			Job: "nightly", Host: host, Log: filepath.Join(dir, host+".log"), Lock: filepath.Join(dir, host+".lock"),
			RecordMySQL: dsn, Remote: remote.Remote{}, SkipExitCode: 75, Command: command, Now: now,
			Stdout: &bytes.Buffer{}, Stderr: &stderr,
		})
		return code, stderr.String()
	}
	openRows := func() int {
		var n int
		admin.QueryRow("SELECT COUNT(*) FROM job_runs WHERE finished_at IS NULL").Scan(&n)
		return n
	}

	var wg sync.WaitGroup
	for _, host := range []string{"hostA", "hostB"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, stderr := run(host, "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", release); code != 0 {
				t.Errorf("%s: exit %d %s", host, code, stderr)
			}
		}()
	}
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600); wg.Wait() }) // the runs end, should the wait fail
	testproc.WaitUntil(t, minWait, "the two runs' rows", func() bool { return openRows() >= 2 })
	if code, stderr := run("hostA", "true"); code != 75 {
		t.Errorf("third run on hostA: exit %d %s, want 75 (skip)", code, stderr)
	}
	os.WriteFile(release, nil, 0o600)
	wg.Wait()

	rows, err := admin.Query("SELECT host, status FROM job_runs ORDER BY host, status")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var host string
		var status sql.NullString
		rows.Scan(&host, &status)
		got = append(got, host+":"+status.String)
	}
	rows.Close()
	if strings.Join(got, " ") != "hostA:skipped hostA:success hostB:success" {
		t.Fatalf("rows %v", got)
	}

	in.waitFor(20*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="nightly",result="success"}`:            2,
		`jobwatch_job_skips_total{job_name="nightly",reason="other"}`:             1, // a job_runs row says skipped, not why
		`jobwatch_job_overlaps_total{job_name="nightly"}`:                         1,
		`jobwatch_job_duplicate_runs_total{job_name="nightly",kind="multi_host"}`: 1,
		`jobwatch_job_running{job_name="nightly"}`:                                0,
		`jobwatch_source_parse_errors_total{source="db"}`:                         0,
	})
}
