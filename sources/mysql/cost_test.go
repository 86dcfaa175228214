package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/sources"
)

// handlerReads is SHOW SESSION STATUS LIKE 'Handler_read%' on one connection.
func handlerReads(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SHOW SESSION STATUS LIKE 'Handler_read%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// readsOf runs f and returns the handler reads it caused on db's single
// connection, less those of the SHOW STATUS around it.
func readsOf(t *testing.T, db *sql.DB, f func()) (total int64, detail string) {
	t.Helper()
	a := handlerReads(t, db)
	b := handlerReads(t, db) // the cost of SHOW STATUS itself
	f()
	c := handlerReads(t, db)
	var parts []string
	for _, k := range []string{"Handler_read_first", "Handler_read_key", "Handler_read_last", "Handler_read_next", "Handler_read_prev", "Handler_read_retry", "Handler_read_rnd", "Handler_read_rnd_deleted", "Handler_read_rnd_next"} {
		d := (c[k] - b[k]) - (b[k] - a[k])
		total += d
		if d != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(k, "Handler_"), d))
		}
	}
	return total, strings.Join(parts, " ")
}

// TestMySQLPollCost fills the table with 1,000,000 rows and measures, with
// the server's handler counters, the rows a poll examines: it must not
// depend on the size of the table.
//
//	go test -run TestMySQLPollCost -v ./sources/
func TestMySQLPollCost(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a table with 1,000,000 rows (about 15s)")
	}
	began := time.Now()
	srv := mariadbtest.Start(t)
	f := newFixture(t, srv)
	const rows = 1000000
	fill := time.Now()
	// Secondary indexes are faster built once, sorted, than row by row.
	f.exec("ALTER TABLE job_runs DROP KEY job_status_finished, DROP KEY job_open")
	f.exec(`INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid)
		SELECT CONCAT('job', seq % 50),
		       TIMESTAMP'2020-01-01 00:00:00' + INTERVAL seq MINUTE,
		       TIMESTAMP'2020-01-01 00:00:30.5' + INTERVAL seq MINUTE,
		       ELT(1 + seq % 20, 'failure', 'skipped', 'timeout', 'error', 'success', 'success', 'success', 'success', 'success', 'success',
		                         'success', 'success', 'success', 'success', 'success', 'success', 'success', 'success', 'success', 'success'),
		       CONCAT('host', seq % 4), 1000 + seq % 30000
		FROM seq_1_to_` + fmt.Sprint(rows))
	f.exec("ALTER TABLE job_runs ADD KEY job_status_finished (job_name, status, finished_at), ADD KEY job_open (job_name, finished_at, started_at)")
	// A few runs in progress (old, abandoned ones among them).
	for i := range 5 {
		f.start(fmt.Sprintf("job%d", i), "host9", 90+i, time.Duration(i)*time.Minute)
	}
	t.Logf("filled %d rows in %v", rows+5, time.Since(fill).Round(time.Millisecond))
	f.exec("ANALYZE TABLE job_runs")

	var jobs []string
	for i := range 50 {
		jobs = append(jobs, fmt.Sprintf("job%d", i))
	}
	s := f.source(f.sourceConfig("db"), sources.Deps{Jobs: jobs})
	conn, err := mysql.NewConnector(s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1) // the source's queries and SHOW SESSION STATUS share a session
	defer db.Close()
	sink := &recordingSink{}
	r := s.newRunner(db, nil, sink)
	ctx := context.Background()

	// Schema check, then the first start: bounded queries per job.
	if _, err := r.step(ctx); err != nil { // includes the schema check: not measured
		t.Fatal(err)
	}
	r.pos, r.lastPos = nil, nil
	var boot int64
	var bootDetail string
	bootTime := time.Now()
	boot, bootDetail = readsOf(t, db, func() {
		if _, err := r.step(ctx); err != nil {
			t.Fatal(err)
		}
	})
	bootDur := time.Since(bootTime)
	t.Logf("first start, 50 jobs, %d events: %d handler reads (%s) in %v", len(sink.events()), boot, bootDetail, bootDur.Round(time.Millisecond))
	if boot > 50*(7+5+mysqlStartTail/50+10)+mysqlStartTail+100 {
		t.Errorf("first start read %d rows: not bounded per job", boot)
	}

	// An empty poll, with 5 runs in progress to re-read.
	var empty int64
	var detail string
	pollTime := time.Now()
	const polls = 20
	for range polls {
		n, d := readsOf(t, db, func() {
			if _, err := r.step(ctx); err != nil {
				t.Fatal(err)
			}
		})
		empty, detail = n, d
	}
	t.Logf("empty poll (5 runs in progress): %d handler reads (%s), %v per poll", empty, detail, (time.Since(pollTime) / polls).Round(time.Microsecond))
	if empty > 5+10 {
		t.Errorf("an empty poll read %d rows, want a handful", empty)
	}

	// No run in progress, no missing ids: the floor.
	f.exec("UPDATE job_runs SET finished_at = started_at, status = 'success' WHERE finished_at IS NULL")
	r.step(ctx)
	r.pos.Gaps = nil
	n, d := readsOf(t, db, func() {
		if _, err := r.step(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("empty poll (nothing in progress): %d handler reads (%s)", n, d)
	if n > 10 {
		t.Errorf("an empty poll read %d rows, want a handful", n)
	}

	// A poll that finds 100 new rows reads about 100.
	f.exec(`INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid)
		SELECT 'job1', NOW(6), NOW(6), 'success', 'h', seq FROM seq_1_to_100`)
	n, d = readsOf(t, db, func() {
		if _, err := r.step(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("poll finding 100 new rows: %d handler reads (%s)", n, d)
	if n > 100+10 {
		t.Errorf("a poll of 100 new rows read %d rows", n)
	}

	var plan strings.Builder
	explain := func(q string, args ...any) {
		rows, err := db.Query("EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			rows.Scan(ptrs...)
			fmt.Fprintf(&plan, "\n  %s\n   ", q)
			for i, c := range cols {
				if vals[i].Valid {
					fmt.Fprintf(&plan, " %s=%s", c, vals[i].String)
				}
			}
		}
	}
	explain("SELECT "+s.selectList+" FROM job_runs WHERE `id` > ? ORDER BY `id` LIMIT 1000", r.pos.ID)
	explain("SELECT "+s.selectList+" FROM job_runs WHERE `id` IN (?, ?) OR `id` BETWEEN ? AND ?", 5, 6, 10, 20)
	explain("SELECT "+s.selectList+" FROM job_runs WHERE `job_name` = ? AND `status` = ? AND `finished_at` IS NOT NULL ORDER BY `finished_at` DESC LIMIT 1", "job1", "success")
	explain("SELECT "+s.selectList+" FROM job_runs WHERE `job_name` = ? AND `finished_at` IS NULL ORDER BY `started_at` DESC LIMIT 1000", "job1")
	t.Logf("plans:%s", plan.String())
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}
