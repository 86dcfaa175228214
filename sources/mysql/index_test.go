package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/sources"
)

// indexShape is a set of secondary indexes of job_runs.
type indexShape struct {
	name string
	keys string // ALTER TABLE ... ADD clauses; "" for none
}

var indexShapes = []indexShape{
	{"documented", "ADD KEY job_status_finished (job_name, status, finished_at), ADD KEY job_open (job_name, finished_at, started_at)"},
	{"common", "ADD KEY job_finished (job_name, finished_at)"},
	{"job only", "ADD KEY job (job_name)"},
	{"none", ""},
}

// fillShapeTable fills job_runs with 100,000 finished runs of 10 jobs (job3
// fails every 97th run, job7 times out every 389th), a job "rare"
// whose only failure is its first run, followed by 3,000 successes, a run
// in progress left from long ago and 5 recent ones, then gives it the
// shape's indexes.
func fillShapeTable(f *fixture, shape indexShape) {
	f.exec("ALTER TABLE job_runs DROP KEY job_status_finished, DROP KEY job_open")
	f.exec(`INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid)
		VALUES ('rare', TIMESTAMP'2019-01-01 00:00:00', TIMESTAMP'2019-01-01 00:01:00', 'failure', 'h', 1)`)
	f.start("job3", "old", 2, -365*24*60*60*1e9)
	f.exec(`INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid)
		SELECT CONCAT('job', seq % 10),
		       TIMESTAMP'2020-01-01 00:00:00' + INTERVAL seq MINUTE,
		       TIMESTAMP'2020-01-01 00:00:30' + INTERVAL seq MINUTE,
		       CASE WHEN seq % 970 = 3 THEN 'failure' WHEN seq % 3890 = 7 THEN 'timeout' ELSE 'success' END,
		       'h', seq
		FROM seq_1_to_100000`)
	f.exec(`INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid)
		SELECT 'rare', TIMESTAMP'2021-01-01 00:00:00' + INTERVAL seq MINUTE,
		       TIMESTAMP'2021-01-01 00:00:10' + INTERVAL seq MINUTE, 'success', 'h', seq
		FROM seq_1_to_3000`)
	for i := range 5 {
		f.start(fmt.Sprintf("job%d", i), "now", 100+i, 0)
	}
	if shape.keys != "" {
		f.exec("ALTER TABLE job_runs " + shape.keys)
	}
	f.exec("ANALYZE TABLE job_runs")
}

// explainKey returns the key and access type MariaDB's plan uses for q.
func explainKey(t *testing.T, db *sql.DB, q string, args ...any) (key, typ string) {
	t.Helper()
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
	if !rows.Next() {
		t.Fatalf("EXPLAIN %s: no plan", q)
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		switch c {
		case "key":
			key = vals[i].String
		case "type":
			typ = vals[i].String
		}
	}
	return key, typ
}

// testMySQLIndexShapes measures the first start's handler reads on a table
// of 100,000 rows with each shape of indexes: bounded with every shape, the
// same runs found where an index serves the look-ups, and check-config
// warns where none does. It also measures what the look-ups of the
// documented index cost on the common one, the full scans this replaces.
func testMySQLIndexShapes(t *testing.T, srv *mariadbtest.Server) {
	if testing.Short() {
		t.Skip("fills tables of 100,000 rows")
	}
	jobs := []string{"rare"}
	for i := range 10 {
		jobs = append(jobs, fmt.Sprintf("job%d", i))
	}
	found := map[string][]string{}
	for _, shape := range indexShapes {
		t.Run(shape.name, func(t *testing.T) {
			f := newFixture(t, srv)
			fillShapeTable(f, shape)
			s := f.source(f.sourceConfig("db"), sources.Deps{Jobs: jobs})
			err := s.Check(context.Background())
			var w sources.Warning
			warned := errors.As(err, &w)
			if err != nil && !warned {
				t.Fatal(err)
			}
			wantWarning := shape.name == "job only" || shape.name == "none"
			if warned != wantWarning {
				t.Errorf("check-config warning %q; want one: %v", err, wantWarning)
			}
			if warned && !strings.Contains(string(w), "CREATE INDEX job_open ON `job_runs` (job_name, finished_at, started_at)") {
				t.Errorf("the warning does not name the index to create: %s", w)
			}

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
			if _, err := r.step(ctx); err != nil { // schema check: not measured
				t.Fatal(err)
			}
			sink.take()
			r.pos = nil
			reads, detail := readsOf(t, db, func() {
				if _, err := r.step(ctx); err != nil {
					t.Fatal(err)
				}
			})
			evs := sink.take()
			found[shape.name] = evs
			t.Logf("%s: first start, %d jobs: %d handler reads (%s), %d events", shape.name, len(jobs), reads, detail, len(evs))
			var bound int64
			switch shape.name {
			case "documented":
				bound = 2000
			case "common":
				bound = int64(len(jobs))*(mysqlBootstrapWalk+50) + 1000
			default:
				bound = mysqlBootstrapWindow + 1000
			}
			if reads > bound {
				t.Errorf("first start read %d rows, want at most %d", reads, bound)
			}

			// The plans of the look-ups this shape uses.
			sel := "SELECT " + s.selectList + " FROM job_runs "
			switch {
			case r.plan.byStatus:
				key, typ := explainKey(t, db, sel+"WHERE `job_name` = ? AND `status` = ? AND `finished_at` IS NOT NULL ORDER BY `finished_at` DESC LIMIT 1", "job1", "timeout")
				t.Logf("last result: key=%s type=%s", key, typ)
				if key != "job_status_finished" {
					t.Errorf("last result looked up on %q, want job_status_finished", key)
				}
			case r.plan.byFinished:
				key, typ := explainKey(t, db, sel+"WHERE `job_name` = ? AND `finished_at` IS NOT NULL ORDER BY `finished_at` DESC LIMIT 1024", "job1")
				t.Logf("walk back: key=%s type=%s", key, typ)
				if key != "job_finished" {
					t.Errorf("walk back on %q, want job_finished", key)
				}
				// The documented look-up on this index: the full scans of
				// the first start before it walked back.
				r.pos = nil
				r.plan.byStatus = true
				before, detail := readsOf(t, db, func() {
					if _, err := r.step(ctx); err != nil {
						t.Fatal(err)
					}
				})
				sink.take()
				t.Logf("common, looked up by status as before: %d handler reads (%s)", before, detail)
				if before < 5*reads {
					t.Errorf("by status on the common index read %d rows, the walk %d: the measure does not show the scan", before, reads)
				}
			default:
				key, typ := explainKey(t, db, sel+"WHERE `id` > ? AND `id` <= ? ORDER BY `id` DESC LIMIT 1000", 50000, 103007)
				t.Logf("window: key=%s type=%s", key, typ)
				if key != "PRIMARY" || typ != "range" {
					t.Errorf("window read on %s/%s, want PRIMARY/range", key, typ)
				}
			}
		})
	}
	doc := found["documented"]
	if len(doc) == 0 {
		t.Fatal("the documented shape found nothing")
	}
	without := func(evs []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(evs), func(e string) bool {
			for _, d := range drop {
				if strings.Contains(e, d) {
					return true
				}
			}
			return false
		})
	}
	// rare's only failure is 3,000 runs back: beyond the walk and the
	// window. The run in progress left from long ago is beyond the window.
	wantEvents(t, "common", found["common"], without(doc, "end rare h/1 ", "start rare h/1 ")...)
	wantEvents(t, "job only", found["job only"], without(doc, "end rare h/1 ", "start rare h/1 ", "job3 old/2")...)
	wantEvents(t, "none", found["none"], without(doc, "end rare h/1 ", "start rare h/1 ", "job3 old/2")...)
}
