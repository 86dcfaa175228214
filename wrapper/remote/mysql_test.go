package remote

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"

	"github.com/jobwatch/jobwatch/wrapper"
)

// The MySQL layer and the job_runs table, against one throwaway MariaDB.
func TestMySQL(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	dsn := srv.RootDSN(db)
	admin := srv.DB(t, db)
	srv.Exec(t, db, jobRunsTable("job_runs"), jobRunsTable("runs_exit"), "ALTER TABLE runs_exit ADD exit_code INT NULL")

	t.Run("two hosts, one runs", func(t *testing.T) {
		dir := t.TempDir()
		logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
		release := filepath.Join(dir, "release")
		waitA := startWrapper(t, "hostA", nil, "--job", "nightly", "--log", logA, "--lock", filepath.Join(dir, "a.lock"), "--lock-mysql", dsn,
			"--", "sh", "-c", waitJob, "sh", release)
		start := waitRecord(t, logA, "start", 30*time.Second)
		killGroupAtEnd(t, start.PID)
		code, stderr := startWrapper(t, "hostB", nil, "--job", "nightly", "--log", logB, "--lock", filepath.Join(dir, "b.lock"), "--lock-mysql", dsn,
			"--skip-exit-code", "75", "--", "true")()
		if code != 75 || stderr != "" {
			t.Fatalf("second host: exit %d stderr %q", code, stderr)
		}
		recs := readRecords(t, logB)
		if events(recs) != "skip" {
			t.Fatalf("records %s", events(recs))
		}
		if s := recs[0]; s.Lock != "mysql" || s.Reason != "locked" || !regexp.MustCompile(`^connection \d+ from 127\.0\.0\.1:\d+$`).MatchString(s.Holder) {
			t.Errorf("skip %+v, want lock mysql, reason locked, the holder's connection and host", s)
		}
		os.WriteFile(release, nil, 0o600)
		if code, stderr := waitA(); code != 0 {
			t.Fatalf("first host: exit %d %s", code, stderr)
		}
		var free sql.NullInt64
		admin.QueryRow("SELECT IS_FREE_LOCK('jobwatch.nightly')").Scan(&free)
		if free.Int64 != 1 {
			t.Errorf("the lock is still held after the run")
		}
	})

	t.Run("eight wrappers, two layers", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		count := filepath.Join(dir, "count")
		script := `echo run >> "$1"; i=0; while n=$(grep -c '"skip"' "$2" 2>/dev/null); [ "${n:-0}" -lt 7 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
		var waits []func() (int, string)
		for i := range 8 {
			host := "host" + strconv.Itoa(i/2)
			waits = append(waits, startWrapper(t, host, nil, "--job", "eight", "--log", log, "--lock", filepath.Join(dir, host+".lock"),
				"--lock-mysql", dsn, "--", "sh", "-c", script, "sh", count, log))
		}
		for i, w := range waits {
			if code, stderr := w(); code != 0 {
				t.Errorf("wrapper %d exited %d: %s", i, code, stderr)
			}
		}
		if b, _ := os.ReadFile(count); string(b) != "run\n" {
			t.Errorf("command ran %d times, want once", strings.Count(string(b), "run"))
		}
		recs := readRecords(t, log)
		if ev := events(recs); strings.Count(ev, "skip") != 7 || strings.Count(ev, "start") != 1 || strings.Count(ev, "end") != 1 {
			t.Errorf("records %s, want one start and seven skips", events(recs))
		}
	})

	t.Run("connection killed", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		wait := startWrapper(t, "h", []string{testCheckEnv + "=1s"}, "--job", "killed", "--log", log, "--lock-mysql", dsn, "--kill-after", "1s",
			"--", "sh", "-c", "sleep 60 & wait")
		start := waitRecord(t, log, "start", 30*time.Second)
		killGroupAtEnd(t, start.PID)
		var id int64
		if err := admin.QueryRow("SELECT IS_USED_LOCK('jobwatch.killed')").Scan(&id); err != nil {
			t.Fatalf("lock not held while the job runs: %v", err)
		}
		if _, err := admin.Exec("KILL ?", id); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		lost := waitRecord(t, log, "lock_lost", 30*time.Second)
		if took := time.Since(killed); took > 6*time.Second {
			t.Errorf("lock_lost %s after the KILL, want within 6s", took)
		}
		if lost.Lock != "mysql" || lost.Reason != "connection_lost" {
			t.Errorf("lock_lost %+v", lost)
		}
		if code, _ := wait(); code != wrapper.ExitWrapper {
			t.Errorf("exit %d, want %d", code, wrapper.ExitWrapper)
		}
		if recs := readRecords(t, log); events(recs) != "start,lock_lost,end" || recs[2].Reason != "lock_lost" {
			t.Errorf("records %+v", recs)
		}
		if groupAlive(start.PID) {
			t.Error("the job's group survived the lost lock")
		}
	})

	t.Run("unavailable", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		code, stderr := wrap(t, "--job", "j", "--log", log, "--lock-mysql", "root@tcp(127.0.0.1:1)/", "--skip-exit-code", "75", "--", "true")
		if code != 75 || !strings.Contains(stderr, "run skipped") {
			t.Errorf("exit %d stderr %q", code, stderr)
		}
		if recs := readRecords(t, log); events(recs) != "skip" || recs[0].Reason != "lock_unavailable" || recs[0].Lock != "mysql" {
			t.Errorf("records %+v", recs)
		}
	})

	t.Run("password never shown", func(t *testing.T) {
		const pw = "My-S3cret-pw"
		user := srv.NewUser(t, pw, db)
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		release := filepath.Join(dir, "release")
		os.Setenv("JW_TEST_DB_PW", pw)
		defer os.Unsetenv("JW_TEST_DB_PW")
		good := user + ":" + pw + "@tcp(" + srv.Addr() + ")/" + db
		dsnFile := filepath.Join(dir, "dsn")
		os.WriteFile(dsnFile, []byte(good+"\n"), 0o600)
		wait := startWrapper(t, "h", nil, "--job", "secret", "--log", log, "--lock-mysql", good, "--", "sh", "-c", waitJob, "sh", release)
		start := waitRecord(t, log, "start", 30*time.Second)
		killGroupAtEnd(t, start.PID)
		var all strings.Builder
		for _, args := range [][]string{
			{"--lock-mysql", good},
			{"--lock-mysql", user + ":${JW_TEST_DB_PW}@tcp(" + srv.Addr() + ")/" + db},
			{"--lock-mysql-dsn-file", dsnFile},
			{"--lock-mysql", user + ":wrong" + pw + "@tcp(" + srv.Addr() + ")/" + db},
			{"--lock-mysql", user + ":" + pw + "@tcp(127.0.0.1:1)/" + db},
			{"--lock-mysql", user + ":" + pw + "@tcp(" + srv.Addr() + ")/" + db + "?notaparam"},
			{"--record-mysql", user + ":" + pw + "@tcp(" + srv.Addr() + ")/" + db}, // SELECT only: the insert is refused
			{"--record-mysql", user + ":" + pw + "@tcp(127.0.0.1:1)/" + db},
		} {
			full := append([]string{"--job", "secret", "--log", log}, args...)
			code, stderr := wrap(t, append(full, "--", "true")...)
			t.Logf("%d %s", code, stderr)
			all.WriteString(stderr)
		}
		os.WriteFile(release, nil, 0o600)
		_, stderr := wait()
		all.WriteString(stderr)
		b, _ := os.ReadFile(log)
		all.Write(b)
		if strings.Contains(all.String(), pw) {
			t.Errorf("the password shows:\n%s", all.String())
		}
		// Held: by URL, ${VAR}, the DSN file, and the DSN with an extra
		// parameter.
		if strings.Count(all.String(), `"lock":"mysql","holder":"connection `) != 4 {
			t.Errorf("want four skips naming the holder:\n%s", all.String())
		}
	})

	t.Run("record table", func(t *testing.T) {
		for _, table := range []string{"job_runs", "runs_exit"} {
			t.Run(table, func(t *testing.T) {
				dir := t.TempDir()
				log := filepath.Join(dir, "runs.log")
				lock := filepath.Join(dir, "j.lock")
				release := filepath.Join(dir, "release")
				job := "rec_" + table
				args := []string{"--job", job, "--log", log, "--lock", lock, "--record-mysql", dsn, "--record-table", db + "." + table}
				wait := startWrapper(t, "hostA", nil, append(args, "--", "sh", "-c", waitJob+"; exit 3", "sh", release)...)
				start := waitRecord(t, log, "start", 30*time.Second)
				killGroupAtEnd(t, start.PID)
				var rows []jobRunRow
				waitFor(t, "the run's row", 10*time.Second, func() bool {
					rows = readJobRuns(t, admin, table, job)
					return len(rows) == 1
				})
				if r := rows[0]; r.finished.Valid || r.status.Valid || r.host != "hostA" || r.pid != int64(start.PID) {
					t.Errorf("row while running %+v, want in progress on hostA with pid %d", r, start.PID)
				}
				if code, _ := startWrapper(t, "hostA", nil, append(args, "--skip-exit-code", "75", "--", "true")...)(); code != 75 {
					t.Errorf("second run: exit %d, want 75 (skip)", code)
				}
				os.WriteFile(release, nil, 0o600)
				if code, stderr := wait(); code != 3 {
					t.Errorf("exit %d %s, want 3", code, stderr)
				}
				rows = readJobRuns(t, admin, table, job)
				if len(rows) != 2 {
					t.Fatalf("rows %+v, want the run and the skip", rows)
				}
				run, skip := rows[0], rows[1]
				if !run.finished.Valid || run.status.String != "failure" || run.finished.Time.Before(run.started) {
					t.Errorf("run's row %+v, want finished, failure", run)
				}
				if want := table == "runs_exit"; run.exitCode.Valid != want || (want && run.exitCode.Int64 != 3) {
					t.Errorf("exit_code %+v in table %s", run.exitCode, table)
				}
				if skip.status.String != "skipped" || !skip.finished.Valid || skip.host != "hostA" {
					t.Errorf("skip's row %+v", skip)
				}
			})
		}
	})

	t.Run("record table down", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		marker := filepath.Join(dir, "ran")
		down := "root@tcp(127.0.0.1:1)/" + db
		code, stderr := wrap(t, "--job", "j", "--log", log, "--record-mysql", down, "--", "touch", marker)
		if code != 0 || !strings.Contains(stderr, "missed the start record") || !strings.Contains(stderr, "missed the end record") {
			t.Errorf("exit %d stderr %q, want 0 and the table's misses", code, stderr)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Error("the job did not run")
		}
		if recs := readRecords(t, log); events(recs) != "start,end" {
			t.Errorf("run log %s, want start,end", events(recs))
		}
		// Without a run log the records are lost: not a success.
		code, _ = wrap(t, "--job", "j", "--log", "-", "--record-mysql", down, "--", "true")
		if code != wrapper.ExitWrapper {
			t.Errorf("--log - with the table down: exit %d, want %d", code, wrapper.ExitWrapper)
		}
		code, stderr = wrap(t, "--job", "j", "--log", "-", "--record-mysql", dsn, "--", "true")
		if code != 0 || stderr != "" {
			t.Errorf("--log - with the table up: exit %d %q", code, stderr)
		}
		if rows := readJobRuns(t, admin, "job_runs", "j"); len(rows) != 1 || rows[0].status.String != "success" {
			t.Errorf("rows %+v, want one successful run", rows)
		}
	})
}

// jobRunsTable is examples/job_runs.sql's table under another name.
func jobRunsTable(name string) string {
	b, err := os.ReadFile("../../examples/job_runs.sql")
	if err != nil {
		panic(err)
	}
	s := string(b)
	s = s[strings.Index(s, "CREATE TABLE"):]
	s = s[:strings.Index(s, ";")]
	return strings.Replace(s, "job_runs", name, 1)
}

type jobRunRow struct {
	started  time.Time
	finished sql.NullTime
	status   sql.NullString
	host     string
	pid      int64
	exitCode sql.NullInt64
}

func readJobRuns(t *testing.T, db *sql.DB, table, job string) []jobRunRow {
	t.Helper()
	exit := "NULL"
	if table == "runs_exit" {
		exit = "exit_code"
	}
	rows, err := db.Query("SELECT started_at, finished_at, status, host, pid, "+exit+" FROM `"+table+"` WHERE job_name = ? ORDER BY id", job)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []jobRunRow
	for rows.Next() {
		var r jobRunRow
		if err := rows.Scan(&r.started, &r.finished, &r.status, &r.host, &r.pid, &r.exitCode); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
