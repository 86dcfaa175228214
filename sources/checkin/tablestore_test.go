package checkin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/sources"
)

// tableReceiver is a receiver with store: mysql on a fresh database with
// examples/job_runs.sql's table.
func tableReceiver(t *testing.T, srv *mariadbtest.Server, db string) *Receiver {
	t.Helper()
	r := newReceiver(t, t.TempDir(), nil)
	r.useStore(tableConfig(srv, db))
	t.Cleanup(func() { r.Close() })
	return r
}

// tableConfig is store: mysql on db's job_runs.
func tableConfig(srv *mariadbtest.Server, db string) Config {
	return Config{Store: StoreMySQL, MySQLDSN: srv.RootDSN(db), Table: "job_runs"}
}

// jobRunsDB is a fresh database with examples/job_runs.sql's table, and an
// exit_code column.
func jobRunsDB(t testing.TB, srv *mariadbtest.Server) string {
	t.Helper()
	db := srv.JobRunsDatabase(t)
	srv.Exec(t, db, "ALTER TABLE job_runs ADD exit_code INT NULL")
	return db
}

type row struct {
	job, host, status, rid, output string
	finished                       bool
	code                           sql.NullInt64
}

func tableRows(t *testing.T, admin *sql.DB) []row {
	t.Helper()
	rows, err := admin.Query(`SELECT job_name, host, COALESCE(status, ''), COALESCE(run_id, ''), COALESCE(output, ''),
finished_at IS NOT NULL, exit_code FROM job_runs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.job, &r.host, &r.status, &r.rid, &r.output, &r.finished, &r.code); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

const rid1 = "0b6e3c1e-6f0a-4c47-9d3f-1a2b3c4d5e6f"

// TestTableStoreRows: each check-in is a row as --record-mysql writes it;
// a retry with the same rid, on this receiver or a second one on the same
// table (another replica), changes nothing.
func TestTableStoreRows(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := jobRunsDB(t, srv)
	a, b := tableReceiver(t, srv, db), tableReceiver(t, srv, db)
	for _, c := range []struct {
		r      *Receiver
		target string
		body   string
	}{
		{a, "/ping/backup/start?rid=" + rid1 + "&host=h1&pid=7", ""},
		{b, "/ping/backup/start?rid=" + rid1 + "&host=h1&pid=7", ""}, // retried on the other replica
		{a, "/ping/backup/3?rid=" + rid1 + "&host=h1", "disk full"},
		{b, "/ping/backup/3?rid=" + rid1 + "&host=h1", "disk full"},
		{a, "/ping/sync?host=h2", ""}, // an end without a start: one finished row
		{b, "/ping/sync/skip?host=h2&reason=locked", ""},
		{a, "/ping/sync/start?host=h3", ""}, // no rid: the end finishes the host's run
		{b, "/ping/sync/fail?host=h3", ""},
	} {
		if w := do(c.r, http.MethodPost, c.target, c.body); w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.target, w.Code, w.Body)
		}
	}
	got := tableRows(t, srv.DB(t, db))
	want := []row{
		{job: "backup", host: "h1", status: "failure", rid: rid1, output: "disk full", finished: true, code: sql.NullInt64{Int64: 3, Valid: true}},
		{job: "sync", host: "h2", status: "success", finished: true},
		{job: "sync", host: "h2", status: "skipped", finished: true},
		{job: "sync", host: "h3", status: "failure", finished: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows:\n got %v\nwant %v", got, want)
	}
	if len(spooled(t, a.opts.Dir))+len(spooled(t, b.opts.Dir)) > 0 {
		t.Fatal("check-ins stored in the table were spooled too")
	}
}

// TestTableStoreOutputNotUTF8: a body that is not UTF-8 (binary, or cut
// to its last 10 KiB inside a character) is stored, its bad bytes as
// U+FFFD, rather than refused by the utf8mb4 column at every retry.
func TestTableStoreOutputNotUTF8(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := jobRunsDB(t, srv)
	r := tableReceiver(t, srv, db)
	r.SetMaxBody(1 << 20)
	for i, body := range []string{"\xff\xfebinary", strings.Repeat("é", 6000) + "x"} {
		if w := do(r, http.MethodPost, fmt.Sprintf("/ping/backup/1?rid=%s%d", rid1[:35], i), body); w.Code != http.StatusOK {
			t.Fatalf("body %.10q...: %d %s", body, w.Code, w.Body)
		}
	}
	got := tableRows(t, srv.DB(t, db))
	want := []string{"\uFFFDbinary", "\uFFFD" + strings.Repeat("é", 5119) + "x"}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.output != want[i] {
			t.Errorf("row %d: output %.20q (%d bytes), want %.20q (%d bytes)", i, r.output, len(r.output), want[i], len(want[i]))
		}
	}
}

// TestTableStoreReload: a reload to store: mysql sends check-ins to the
// table, not the spool, and one back to the spool sends them there again.
func TestTableStoreReload(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := jobRunsDB(t, srv)
	dir := t.TempDir()
	r := newReceiver(t, dir, nil)
	defer r.Close()
	ping := func(what string) {
		t.Helper()
		if w := do(r, http.MethodGet, "/ping/backup", ""); w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", what, w.Code, w.Body)
		}
	}
	ping("spool")
	r.useStore(tableConfig(srv, db))
	ping("table")
	r.useStore(Config{Store: StoreSpool})
	ping("spool again")
	if n := len(spooled(t, dir)); n != 2 {
		t.Errorf("%d check-ins spooled, want 2", n)
	}
	if n := len(tableRows(t, srv.DB(t, db))); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// TestTableStoreGroupCommit: concurrent check-ins are all committed, one
// row each, and share transactions.
func TestTableStoreGroupCommit(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := jobRunsDB(t, srv)
	r := tableReceiver(t, srv, db)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			if w := do(r, http.MethodGet, "/ping/backup?rid="+rid, ""); w.Code != http.StatusOK {
				errs <- fmt.Sprintf("%d %s", w.Code, w.Body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	admin := srv.DB(t, db)
	var rows int
	if err := admin.QueryRow("SELECT COUNT(*) FROM job_runs").Scan(&rows); err != nil || rows != n {
		t.Fatalf("rows: %d, %v; want %d", rows, err, n)
	}
	var commits int
	if err := admin.QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_COMMIT'").Scan(&commits); err != nil {
		t.Fatal(err)
	}
	if commits >= n {
		t.Fatalf("%d commits for %d check-ins: no group commit", commits, n)
	}
}

// TestTableStoreHung: a database that hangs (SIGSTOP) makes a check-in
// answer 503 within 5 s; once it continues, check-ins are accepted, and
// closing the receiver is not held up by the hung one.
func TestTableStoreHung(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := jobRunsDB(t, srv)
	r := tableReceiver(t, srv, db)
	var notSaved atomic.Int64
	r.opts.OnNotSaved = func(store string) {
		if store == StoreMySQL {
			notSaved.Add(1)
		}
	}
	if w := do(r, http.MethodGet, "/ping/backup?rid="+rid1, ""); w.Code != http.StatusOK {
		t.Fatalf("before: %d %s", w.Code, w.Body)
	}
	resume := srv.Hang()
	began := time.Now()
	w := do(r, http.MethodGet, "/ping/sync", "")
	if took := time.Since(began); w.Code != http.StatusServiceUnavailable || took > 5*time.Second {
		t.Fatalf("hung database: %d after %s, want 503 within 5s", w.Code, took)
	}
	if notSaved.Load() != 1 {
		t.Errorf("%d check-ins counted as not saved, want 1", notSaved.Load())
	}
	resume()
	deadline := time.Now().Add(time.Minute)
	for w = do(r, http.MethodGet, "/ping/sync", ""); w.Code != http.StatusOK; w = do(r, http.MethodGet, "/ping/sync", "") {
		if time.Now().After(deadline) {
			t.Fatalf("after SIGCONT: %d %s", w.Code, w.Body)
		}
	}
	// Only the check-in answered 200 is in the table: those answered 503
	// were not written (nor a retry without a run id would count twice).
	var synced int
	if err := srv.DB(t, db).QueryRow("SELECT COUNT(*) FROM job_runs WHERE job_name = 'sync'").Scan(&synced); err != nil || synced != 1 {
		t.Fatalf("%d rows of sync, %v; want the 1 acknowledged", synced, err)
	}
	srv.Hang()
	done := make(chan struct{})
	go func() { do(r, http.MethodGet, "/ping/sync", ""); close(done) }()
	began = time.Now()
	r.Close()
	<-done
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("closing beside a hung database took %s", took)
	}
}

// TestTableStoreNeedsRunIDKey: a table without run_id's unique key refuses
// check-ins (503), saying what to add, rather than count retries twice.
func TestTableStoreNeedsRunIDKey(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	srv.Exec(t, db, "CREATE TABLE job_runs (id BIGINT AUTO_INCREMENT PRIMARY KEY, job_name VARCHAR(191) NOT NULL, started_at DATETIME(6) NOT NULL, finished_at DATETIME(6) NULL, status VARCHAR(32) NULL, host VARCHAR(255) NOT NULL DEFAULT '', pid INT NULL)")
	r := tableReceiver(t, srv, db)
	if w := do(r, http.MethodGet, "/ping/backup", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("%d %s, want 503", w.Code, w.Body)
	}
	var n int
	if err := srv.DB(t, db).QueryRow("SELECT COUNT(*) FROM job_runs").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows %d, %v", n, err)
	}
}

// TestCheckStore: check-config's look at store: mysql's table (checkStore)
// refuses a table check-ins cannot be stored in, as the store itself
// would, saying what it lacks; a server that cannot be reached is only
// unreachable; no error shows the password.
func TestCheckStore(t *testing.T) {
	t.Parallel()
	srv := mariadbtest.Start(t)
	const password = "s3cret-Password"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name        string
		alter       string                 // run on examples/job_runs.sql's table; "-" drops it
		dsn         func(db string) string // default: the administrative user's
		want        string                 // in the error; "" none
		unreachable bool
	}{
		{name: "example table"},
		{name: "no output or exit_code", alter: "ALTER TABLE job_runs DROP COLUMN output"},
		{name: "no table", alter: "-", want: "table job_runs does not exist"},
		{name: "columns missing", alter: "ALTER TABLE job_runs DROP COLUMN host, DROP COLUMN pid", want: "table job_runs has no column host, pid"},
		{name: "no run_id", alter: "ALTER TABLE job_runs DROP KEY job_run, DROP COLUMN run_id",
			want: "table job_runs has no run_id column: check-ins are refused, as a retried one would not be idempotent"},
		{name: "run_id without its key", alter: "ALTER TABLE job_runs DROP KEY job_run",
			want: "table job_runs has a run_id column but no unique key (job_name, run_id)"},
		{name: "wrong password", want: "Access denied", dsn: func(db string) string {
			return srv.Config(srv.NewUser(t, "other-Password", db), password, db).FormatDSN()
		}},
		{name: "unreachable", unreachable: true, want: "database unreachable", dsn: func(db string) string {
			cfg := srv.Config("jobwatch", password, db)
			cfg.Addr = closed
			return cfg.FormatDSN()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.JobRunsDatabase(t)
			switch tc.alter {
			case "":
			case "-":
				srv.Exec(t, db, "DROP TABLE job_runs")
			default:
				srv.Exec(t, db, tc.alter)
			}
			c := tableConfig(srv, db)
			if tc.dsn != nil {
				c.MySQLDSN = tc.dsn(db)
			}
			err := checkStore(context.Background(), c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("checkStore: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("checkStore: %v, want an error saying %q", err, tc.want)
			case errors.Is(err, sources.ErrUnreachable) != tc.unreachable:
				t.Errorf("checkStore: %v: unreachable %v, want %v", err, errors.Is(err, sources.ErrUnreachable), tc.unreachable)
			case err != nil && strings.Contains(err.Error(), password):
				t.Errorf("checkStore's error shows the password: %v", err)
			}
		})
	}
}
