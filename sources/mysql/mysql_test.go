package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/sourcetest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
)

// recordingSink collects what a source hands the tracker.
type recordingSink struct {
	mu      sync.Mutex
	batches []model.Batch
	health  []healthReport
	pos     json.RawMessage
	taken   int // batches already returned by take
}

type healthReport struct {
	up  bool
	err error
}

func (s *recordingSink) Apply(b model.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, b)
	if b.Position != nil {
		s.pos = b.Position
	}
}

func (s *recordingSink) SetHealth(source string, up bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health = append(s.health, healthReport{up, err})
}

func (s *recordingSink) events() []model.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.Event
	for _, b := range s.batches {
		out = append(out, b.Events...)
	}
	return out
}

func (s *recordingSink) position() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}

func (s *recordingSink) lastHealth() (healthReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.health) == 0 {
		return healthReport{}, false
	}
	return s.health[len(s.health)-1], true
}

// take returns the events recorded since the last take.
func (s *recordingSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.batches[s.taken:] {
		for _, e := range b.Events {
			out = append(out, evString(e))
		}
	}
	s.taken = len(s.batches)
	return out
}

func evString(e model.Event) string {
	s := fmt.Sprintf("%s %s %s/%d %s %s", e.Kind, e.Job, e.Host, e.PID, e.RunID, e.Time.UTC().Format("15:04:05.000000"))
	if e.Kind == model.End {
		s += " " + string(e.Result)
		if e.HasDuration {
			s += " " + e.Duration.String()
		}
	}
	return s
}

// logBuffer is a slog destination tests can read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(substr string) int { return strings.Count(l.String(), substr) }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// fixture is a database with examples/job_runs.sql on a throwaway server.
type fixture struct {
	t     *testing.T
	srv   *mariadbtest.Server
	db    string
	admin *sql.DB
	t0    time.Time
}

func newFixture(t *testing.T, srv *mariadbtest.Server) *fixture {
	t.Helper()
	name := srv.JobRunsDatabase(t)
	return &fixture{t: t, srv: srv, db: name, admin: srv.DB(t, name),
		t0: time.Date(2026, 3, 1, 2, 0, 0, 123456000, time.UTC)}
}

func (f *fixture) exec(q string, args ...any) sql.Result {
	f.t.Helper()
	res, err := f.admin.Exec(q, args...)
	if err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return res
}

// at is a time of the test's day: t0 + d.
func (f *fixture) at(d time.Duration) time.Time { return f.t0.Add(d) }

// start inserts a run in progress and returns its id.
func (f *fixture) start(job, host string, pid int, started time.Duration) int64 {
	f.t.Helper()
	res := f.exec("INSERT INTO job_runs (job_name, started_at, host, pid) VALUES (?, ?, ?, ?)", job, f.at(started), host, pid)
	id, _ := res.LastInsertId()
	return id
}

func (f *fixture) finish(id int64, finished time.Duration, status string) {
	f.t.Helper()
	f.exec("UPDATE job_runs SET finished_at = ?, status = ? WHERE id = ?", f.at(finished), status, id)
}

// run inserts a finished run (or a skip) and returns its id.
func (f *fixture) run(job, host string, pid int, started, finished time.Duration, status string) int64 {
	f.t.Helper()
	res := f.exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid) VALUES (?, ?, ?, ?, ?, ?)",
		job, f.at(started), f.at(finished), status, host, pid)
	id, _ := res.LastInsertId()
	return id
}

func (f *fixture) sourceConfig(name string) testSource {
	return testSource{Name: name, Config: Config{
		DSN:          f.srv.RootDSN(f.db),
		PollInterval: config.Duration(100 * time.Millisecond),
	}}
}

func (f *fixture) source(src testSource, deps sources.Deps) *Source {
	f.t.Helper()
	s, err := newSource(src, deps)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// testSource is a config entry of a test: a name and a block.
type testSource struct {
	Name string
	Config
}

func newSource(src testSource, deps sources.Deps) (*Source, error) {
	return New(src.Name, src.Config, deps)
}

// stepper drives a source's polls one by one.
type stepper struct {
	t    *testing.T
	r    *mysqlRunner
	sink *recordingSink
}

func newStepper(t *testing.T, s *Source, from json.RawMessage) *stepper {
	t.Helper()
	db, err := s.open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sink := &recordingSink{}
	return &stepper{t: t, r: s.newRunner(db, from, sink), sink: sink}
}

// step polls once and returns the events of the poll.
func (st *stepper) step() []string {
	st.t.Helper()
	if _, err := st.r.step(context.Background()); err != nil {
		st.t.Fatalf("poll: %v", err)
	}
	return st.sink.take()
}

func (st *stepper) lastBatch() model.Batch {
	st.sink.mu.Lock()
	defer st.sink.mu.Unlock()
	return st.sink.batches[len(st.sink.batches)-1]
}

func wantEvents(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: events\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testproc.WaitUntil(t, 30*time.Second, what, cond)
}

// countPolls makes s wait at most every between two polls, and counts its
// polls: each ends in a wait. A test that checks nothing more comes of
// further polls waits for them by this count.
func countPolls(s *Source, every time.Duration) *atomic.Int64 {
	var n atomic.Int64
	s.wait = func(ctx context.Context, d time.Duration) bool {
		n.Add(1)
		return sources.Sleep(ctx, min(d, every))
	}
	return &n
}

// waitPolls waits until the source has polled k more times than it had
// when called.
func waitPolls(t *testing.T, polls *atomic.Int64, k int64, what string) {
	t.Helper()
	n := polls.Load()
	waitFor(t, what, func() bool { return polls.Load() >= n+k })
}

// TestMySQL runs the tests that share one throwaway server, each in its own
// database.
func TestMySQL(t *testing.T) {
	srv := mariadbtest.Start(t)
	t.Run("StartThenUpdate", func(t *testing.T) { testMySQLStartThenUpdate(t, newFixture(t, srv)) })
	t.Run("FirstStart", func(t *testing.T) { testMySQLFirstStart(t, newFixture(t, srv)) })
	t.Run("MultiHost", func(t *testing.T) { testMySQLMultiHost(t, newFixture(t, srv)) })
	t.Run("LateCommit", func(t *testing.T) { testMySQLLateCommit(t, newFixture(t, srv)) })
	t.Run("AtEnd", func(t *testing.T) { testMySQLAtEnd(t, newFixture(t, srv)) })
	t.Run("Resume", func(t *testing.T) { testMySQLResume(t, newFixture(t, srv)) })
	t.Run("Faults", func(t *testing.T) { testMySQLFaults(t, srv) })
	t.Run("Injection", func(t *testing.T) { testMySQLInjection(t, newFixture(t, srv)) })
	t.Run("Redaction", func(t *testing.T) { testMySQLRedaction(t, newFixture(t, srv)) })
	t.Run("Truncated", func(t *testing.T) { testMySQLTruncated(t, newFixture(t, srv)) })
	t.Run("Tracker", func(t *testing.T) { testMySQLTracker(t, newFixture(t, srv)) })
	t.Run("RunID", func(t *testing.T) { testMySQLRunID(t, newFixture(t, srv)) })
	t.Run("Output", func(t *testing.T) { testMySQLOutput(t, newFixture(t, srv)) })
	t.Run("IndexAdvice", func(t *testing.T) {
		f := newFixture(t, srv)
		f.exec("ALTER TABLE job_runs DROP KEY job_open")
		logs := &logBuffer{}
		s := f.source(f.sourceConfig("db"), sources.Deps{Logger: logs.logger()})
		err := s.Check(context.Background())
		var w sources.Warning
		if !errors.As(err, &w) || !strings.Contains(string(w), "(job_name, finished_at, started_at)") {
			t.Errorf("Check: %v, want a warning naming the missing index", err)
		}
	})
	t.Run("IndexShapes", func(t *testing.T) { testMySQLIndexShapes(t, srv) })
}

// testMySQLTracker: through the real tracker, two hosts running the same job
// at once count running=2 and an overlap; a jobwatch restart from the
// tracker's stored position counts nothing twice. The rows are dated an hour
// ago, when they are written; the tracker's clock is the runs' own time,
// which the test moves on once the rows are read, so that their verdicts
// are made in event time whichever poll read them.
func testMySQLTracker(t *testing.T, f *fixture) {
	now := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	f.t0 = now
	var mu sync.Mutex
	clock := now
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Alive: func(int) bool { return true },
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
	tr.Configure([]model.JobSpec{{Name: "nightly", Schedule: schedule.Every(24 * time.Hour), Scope: "cluster", StaleMultiple: 2}}, // one host at a time: two at once overlap
		[]model.SourceSpec{{Name: "db", Type: Type, Runs: true, LateWindow: time.Second}})
	advance := func(to time.Time) {
		mu.Lock()
		clock = to
		mu.Unlock()
		tr.Reap()
	}
	job := func() model.JobView {
		jobs, _ := tr.View()
		return jobs[0]
	}
	records := func() uint64 {
		_, srcs := tr.View()
		return srcs[0].Records
	}
	var polls *atomic.Int64
	run := func(from json.RawMessage) (stop func()) {
		s := f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"nightly"}})
		polls = countPolls(s, 10*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx, from, tr) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	stop := run(nil)
	waitFor(t, "first start done", func() bool { return tr.Position("db") != nil })
	a := f.start("nightly", "web1", 100, 0)
	b := f.start("nightly", "web2", 200, time.Second)
	f.run("adhoc", "web1", 1, 0, time.Second, "success") // not configured
	waitFor(t, "the starts read", func() bool { return records() == 4 })
	advance(now.Add(30 * time.Second))
	if j := job(); len(j.Open) != 2 || j.Overlaps != 1 {
		t.Errorf("running %d overlaps %d, want 2 and 1", len(j.Open), j.Overlaps)
	}
	stop()

	// jobwatch restarts from the stored position while the runs end.
	f.finish(a, time.Minute, "success")
	f.finish(b, 2*time.Minute, "failure")
	stop = run(tr.Position("db"))
	defer stop()
	waitFor(t, "the ends read", func() bool { return records() == 6 })
	advance(now.Add(3 * time.Minute))
	waitFor(t, "both runs ended", func() bool { return len(job().Open) == 0 })
	waitPolls(t, polls, 3, "three more polls") // which count nothing twice
	j := job()
	if j.RunCounts != [6]uint64{1, 1, 0, 0} || j.Overlaps != 1 {
		t.Errorf("runs %v overlaps %d, want [1 1 0 0] and 1", j.RunCounts, j.Overlaps)
	}
	if _, srcs := tr.View(); srcs[0].UnknownJob != 2 || !srcs[0].Up || srcs[0].LateRecords != 0 {
		t.Errorf("source view %+v, want 2 unknown-job records (start and end), up, none late", srcs[0])
	}
}

// testMySQLRunID: a row's run_id (a check-in's rid) is its run's id; a
// row without one is the source's name and the row's id; a table without
// the column is read as before.
func testMySQLRunID(t *testing.T, f *fixture) {
	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{}), nil)
	wantEvents(t, "empty table", st.step())
	f.exec("INSERT INTO job_runs (job_name, started_at, host, pid, run_id) VALUES ('backup', ?, 'h1', 5, '0b6e3c1e-6f0a-4c47-9d3f-1a2b3c4d5e6f')", f.at(0))
	f.start("backup", "h2", 6, time.Second)
	wantEvents(t, "with and without run_id", st.step(),
		"start backup h1/5 0b6e3c1e-6f0a-4c47-9d3f-1a2b3c4d5e6f 02:00:00.123456",
		"start backup h2/6 db:2 02:00:01.123456")

	f.exec("ALTER TABLE job_runs DROP KEY job_run, DROP COLUMN run_id")
	st = newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{}), nil)
	st.step()
	f.start("backup", "h3", 7, 2*time.Second)
	wantEvents(t, "no run_id column", st.step(), "start backup h3/7 db:3 02:00:02.123456")
}

// takeEnds returns the End events recorded since the last take.
func (s *recordingSink) takeEnds() []model.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.Event
	for _, b := range s.batches[s.taken:] {
		for _, e := range b.Events {
			if e.Kind == model.End {
				out = append(out, e)
			}
		}
	}
	s.taken = len(s.batches)
	return out
}

// testMySQLOutput: a row's output (a check-in's body) is its End's
// Output; of a 1 MB output only the end crosses the wire, at most
// model.OutputExcerpt bytes of it, cut at a character boundary; a table
// without the column is read as before.
func testMySQLOutput(t *testing.T, f *fixture) {
	f.exec("ALTER TABLE job_runs MODIFY output MEDIUMTEXT NULL") // TEXT holds 64 KiB
	s := f.source(f.sourceConfig("db"), sources.Deps{})
	st := newStepper(t, s, nil)
	st.step()
	ends := func(what string, want ...string) {
		t.Helper()
		if _, err := st.r.step(context.Background()); err != nil {
			t.Fatalf("%s: poll: %v", what, err)
		}
		got := st.sink.takeEnds()
		if len(got) != len(want) {
			t.Fatalf("%s: %d ends, want %d", what, len(got), len(want))
		}
		for i, e := range got {
			if e.Output != want[i] {
				t.Errorf("%s: end %d output %d bytes %.40q...%q, want %d bytes %.40q...", what, i, len(e.Output), e.Output, e.Output[max(0, len(e.Output)-20):], len(want[i]), want[i])
			}
		}
	}

	// A finished row, and one finished by an update.
	f.exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, output) VALUES ('backup', ?, ?, 'failure', 'h1', 'disk full')", f.at(0), f.at(time.Second))
	id := f.start("backup", "h2", 5, 2*time.Second)
	ends("a finished row", "disk full")
	f.exec("UPDATE job_runs SET finished_at = ?, status = 'success', output = 'done' WHERE id = ?", f.at(3*time.Second), id)
	f.run("backup", "h3", 6, 4*time.Second, 5*time.Second, "success") // no output
	ends("an updated row, a row without output", "done", "")

	// 1 MB: the excerpt only, read as the end of the value in SQL.
	big := "the start\n" + strings.Repeat("x", 1<<20) + "\nthe error at the end"
	id = f.run("backup", "h1", 7, 6*time.Second, 7*time.Second, "failure")
	f.exec("UPDATE job_runs SET output = ? WHERE id = ?", big, id)
	rows, err := s.query(context.Background(), st.r.db, "WHERE "+s.q["id"]+" = ?", id)
	if err != nil || len(rows) != 1 || len(rows[0].output.String) != model.OutputExcerpt {
		t.Fatalf("query: %d rows, %v; want the output's last %d bytes read", len(rows), err, model.OutputExcerpt)
	}
	ends("a 1 MB output", big[len(big)-model.OutputExcerpt:])
	// Characters of 2 bytes: RIGHT reads the last 10 Ki of them, the End
	// keeps the last 10 KiB, whole characters.
	wide := strings.Repeat("é", 1<<19) + "!"
	f.exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, output) VALUES ('backup', ?, ?, 'failure', 'h1', ?)", f.at(8*time.Second), f.at(9*time.Second), wide)
	ends("a 1 MB output of 2-byte characters", strings.Repeat("é", model.OutputExcerpt/2-1)+"!")

	f.exec("ALTER TABLE job_runs DROP COLUMN output")
	st = newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{}), nil)
	st.step() // the first start
	f.run("backup", "h4", 8, 10*time.Second, 11*time.Second, "success")
	ends("no output column", "")
}

func testMySQLStartThenUpdate(t *testing.T, f *fixture) {
	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{}), nil)
	wantEvents(t, "empty table", st.step())
	if b := st.lastBatch(); string(b.Position) != `{"v":1,"id":0}` {
		t.Errorf("first position %s", b.Position)
	}

	id := f.start("backup", "h1", 101, 0)
	wantEvents(t, "started", st.step(), "start backup h1/101 db:1 02:00:00.123456")
	wantEvents(t, "nothing new", st.step())
	if b := st.lastBatch(); b.Position != nil {
		t.Errorf("unchanged position handed over again: %s", b.Position)
	}
	f.finish(id, 90*time.Second+1500*time.Microsecond, "success")
	wantEvents(t, "finished", st.step(), "end backup h1/101 db:1 02:01:30.124956 success 1m30.0015s")
	wantEvents(t, "nothing new", st.step())

	// Rows first seen finished, skipped, failed (each status value), bad.
	f.run("backup", "h2", 7, time.Hour, time.Hour+time.Second, "FAILED")
	f.run("report", "h1", 8, 2*time.Hour, 2*time.Hour, "skipped")
	f.exec("INSERT INTO job_runs (job_name, started_at, status, host) VALUES ('report', ?, 'skipped', '')", f.at(3*time.Hour))
	f.run("report", "h1", 9, 4*time.Hour, 4*time.Hour+time.Second, "timeout")
	f.run("report", "h1", 10, 5*time.Hour, 5*time.Hour+time.Second, "exploded")
	f.exec("INSERT INTO job_runs (job_name, started_at, host) VALUES ('', ?, 'h1')", f.at(6*time.Hour))
	wantEvents(t, "mixed", st.step(),
		"start backup h2/7 db:2 03:00:00.123456",
		"end backup h2/7 db:2 03:00:01.123456 failure 1s",
		"skip report h1/8 db:3 04:00:00.123456",
		"skip report /0 db:4 05:00:00.123456",
		"start report h1/9 db:5 06:00:00.123456",
		"end report h1/9 db:5 06:00:01.123456 timeout 1s",
	)
	if b := st.lastBatch(); b.ParseErrors != 2 {
		t.Errorf("ParseErrors = %d, want 2 (unknown status, empty job)", b.ParseErrors)
	}
	wantEvents(t, "nothing new", st.step())
	if n := len(st.r.pos.Open); n != 0 {
		t.Errorf("open runs left: %v", st.r.pos.Open)
	}
}

func testMySQLFirstStart(t *testing.T, f *fixture) {
	// History: older and newer successes and failures, a run in progress,
	// a skip, another job's rows.
	f.run("backup", "h1", 1, 0, time.Minute, "success")
	f.run("backup", "h1", 2, time.Hour, time.Hour+time.Minute, "error")
	f.run("backup", "h1", 3, 2*time.Hour, 2*time.Hour+time.Minute, "success") // last success
	f.run("backup", "h1", 4, 3*time.Hour, 3*time.Hour+time.Minute, "failed")  // last failure
	f.run("backup", "h1", 5, 4*time.Hour, 4*time.Hour, "skipped")
	open := f.start("backup", "h2", 6, 5*time.Hour)
	f.run("other", "h1", 7, 6*time.Hour, 6*time.Hour+time.Minute, "success")
	f.start("other", "h1", 8, 7*time.Hour)
	f.run("report", "h1", 9, 8*time.Hour, 8*time.Hour+time.Minute, "timeout")

	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"backup", "report", "never-ran"}}), nil)
	wantEvents(t, "first start", st.step(),
		"start backup h1/3 db:3 04:00:00.123456",
		"end backup h1/3 db:3 04:01:00.123456 success 1m0s",
		"start backup h1/4 db:4 05:00:00.123456",
		"end backup h1/4 db:4 05:01:00.123456 failure 1m0s",
		"start backup h2/6 db:6 07:00:00.123456",
		"start report h1/9 db:9 10:00:00.123456",
		"end report h1/9 db:9 10:01:00.123456 timeout 1m0s",
	)
	if got := string(st.lastBatch().Position); !strings.HasPrefix(got, `{"v":1,"id":9,"open":[6],"gaps":[]`) && !strings.HasPrefix(got, `{"v":1,"id":9,"open":[6]}`) {
		t.Errorf("position after first start: %s", got)
	}
	f.finish(open, 6*time.Hour, "success")
	f.run("other", "h1", 10, 9*time.Hour, 9*time.Hour+time.Minute, "success")
	wantEvents(t, "then incremental", st.step(),
		"end backup h2/6 db:6 08:00:00.123456 success 1h0m0s",
		"start other h1/10 db:10 11:00:00.123456",
		"end other h1/10 db:10 11:01:00.123456 success 1m0s",
	)
}

func testMySQLMultiHost(t *testing.T, f *fixture) {
	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"nightly"}}), nil)
	st.step()
	a := f.start("nightly", "web1", 100, 0)
	b := f.start("nightly", "web2", 200, time.Second)
	wantEvents(t, "two hosts start", st.step(),
		"start nightly web1/100 db:1 02:00:00.123456",
		"start nightly web2/200 db:2 02:00:01.123456",
	)
	f.finish(b, time.Minute, "success")
	f.finish(a, 2*time.Minute, "failure")
	wantEvents(t, "both end", st.step(),
		"end nightly web2/200 db:2 02:01:00.123456 success 59s",
		"end nightly web1/100 db:1 02:02:00.123456 failure 2m0s",
	)
	// Overlapping runs first seen finished come out overlapping, whatever
	// their ids' order.
	f.run("nightly", "web2", 201, time.Hour+time.Second, time.Hour+time.Minute, "success")
	f.run("nightly", "web1", 101, time.Hour, time.Hour+2*time.Minute, "success")
	wantEvents(t, "overlap seen finished", st.step(),
		"start nightly web1/101 db:4 03:00:00.123456",
		"start nightly web2/201 db:3 03:00:01.123456",
		"end nightly web2/201 db:3 03:01:00.123456 success 59s",
		"end nightly web1/101 db:4 03:02:00.123456 success 2m0s",
	)
}

// testMySQLLateCommit: two transactions commit out of id order; the lower
// id, committed last, is still counted, once.
func testMySQLLateCommit(t *testing.T, f *fixture) {
	now := f.t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	src := f.sourceConfig("db")
	src.Lateness = config.Duration(time.Minute)
	st := newStepper(t, f.source(src, sources.Deps{Now: clock}), nil)
	st.step()
	f.run("a", "h", 1, 0, time.Second, "success") // id 1

	ctx := context.Background()
	tx1, err := f.admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	if _, err := tx1.Exec("INSERT INTO job_runs (job_name, started_at, host, pid) VALUES ('a', ?, 'slow', 2)", f.at(time.Minute)); err != nil {
		t.Fatal(err)
	} // id 2, not committed
	f.run("a", "fast", 3, 2*time.Minute, 3*time.Minute, "success") // id 3, committed
	wantEvents(t, "id 3 before id 2 commits", st.step(),
		"start a h/1 db:1 02:00:00.123456",
		"end a h/1 db:1 02:00:01.123456 success 1s",
		"start a fast/3 db:3 02:02:00.123456",
		"end a fast/3 db:3 02:03:00.123456 success 1m0s",
	)
	if got := st.r.pos.Gaps; len(got) != 1 || got[0].From != 2 || got[0].To != 2 {
		t.Fatalf("gaps = %+v, want id 2", got)
	}
	wantEvents(t, "still uncommitted", st.step())
	advance(30 * time.Second)
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "id 2 committed late", st.step(), "start a slow/2 db:2 02:01:00.123456")
	wantEvents(t, "not again", st.step())
	f.finish(2, 4*time.Minute, "success")
	wantEvents(t, "and its end", st.step(), "end a slow/2 db:2 02:04:00.123456 success 3m0s")

	// A rolled back insert leaves a gap that is given up after the late window.
	tx2, err := f.admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx2.Exec("INSERT INTO job_runs (job_name, started_at) VALUES ('a', ?)", f.at(time.Hour)); err != nil {
		t.Fatal(err)
	} // id 4
	f.run("a", "h", 5, time.Hour, time.Hour, "skipped")
	tx2.Rollback()
	wantEvents(t, "after rollback", st.step(), "skip a h/5 db:5 03:00:00.123456")
	if len(st.r.pos.Gaps) != 1 {
		t.Fatalf("gaps = %+v, want id 4", st.r.pos.Gaps)
	}
	advance(59 * time.Second)
	st.step()
	if len(st.r.pos.Gaps) != 1 {
		t.Fatalf("gap given up before the late window: %+v", st.r.pos.Gaps)
	}
	advance(time.Second)
	st.step()
	if len(st.r.pos.Gaps) != 0 {
		t.Fatalf("gap kept after the late window: %+v", st.r.pos.Gaps)
	}
}

// testMySQLAtEnd: a poll that read everything there is says AtEnd, an
// empty one too; one that stopped at its batch limit does not. An empty
// poll's batch changes nothing the tracker would save.
func testMySQLAtEnd(t *testing.T, f *fixture) {
	tr := model.New(model.Options{Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{{Name: "a", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}},
		[]model.SourceSpec{{Name: "db", Type: Type}})
	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}}), nil)
	// poll steps once, applies the poll's batch to the tracker too, and
	// returns it.
	poll := func() model.Batch {
		t.Helper()
		st.step()
		b := st.lastBatch()
		tr.Apply(b)
		return b
	}
	if b := poll(); !b.AtEnd {
		t.Errorf("first start on an empty table: AtEnd false")
	}

	// More rows than a poll reads: the first poll stops at its limit.
	n := mysqlBatchRows + 5
	var values []string
	var args []any
	for i := range n {
		values = append(values, "('a', ?, ?, 'success', 'h', ?)")
		args = append(args, f.at(time.Duration(i)*time.Second), f.at(time.Duration(i)*time.Second+time.Millisecond), i+1)
	}
	f.exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid) VALUES "+strings.Join(values, ", "), args...)
	if b := poll(); b.AtEnd || len(b.Events) != 2*mysqlBatchRows {
		t.Errorf("poll at the batch limit: AtEnd %v with %d events, want false with %d", b.AtEnd, len(b.Events), 2*mysqlBatchRows)
	}
	if b := poll(); !b.AtEnd || len(b.Events) != 10 {
		t.Errorf("poll of the rest: AtEnd %v with %d events, want true with 10", b.AtEnd, len(b.Events))
	}

	// Empty polls say AtEnd, and leave nothing to save.
	tr.Changes()
	for range 3 {
		b := poll()
		if !b.AtEnd || len(b.Events) != 0 || b.Position != nil {
			t.Errorf("empty poll: AtEnd %v, %d events, position %s; want AtEnd alone", b.AtEnd, len(b.Events), b.Position)
		}
		if c := tr.Changes(); c != nil && !c.Empty() {
			t.Errorf("empty poll changed the tracker's state: %+v", c)
		}
	}
}

// testMySQLResume: jobwatch restarts from the position stored with the last
// batch; nothing is repeated or lost, including a run in progress and an id
// committed late across the restart.
func testMySQLResume(t *testing.T, f *fixture) {
	s1 := f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}})
	st1 := newStepper(t, s1, nil)
	st1.step()
	open := f.start("a", "h1", 1, 0)
	f.run("a", "h1", 2, time.Minute, 2*time.Minute, "success")
	tx, err := f.admin.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid) VALUES ('a', ?, ?, 'success', 'late', 3)",
		f.at(3*time.Minute), f.at(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.run("a", "h1", 4, 5*time.Minute, 6*time.Minute, "failure")
	first := st1.step()
	saved := st1.sink.position()

	// jobwatch is down: the run ends, the late one commits, new rows come.
	f.finish(open, 10*time.Minute, "success")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.run("a", "h2", 5, 11*time.Minute, 12*time.Minute, "success")

	st2 := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}}), saved)
	second := st2.step()
	wantEvents(t, "before restart", first,
		"start a h1/1 db:1 02:00:00.123456",
		"start a h1/2 db:2 02:01:00.123456",
		"end a h1/2 db:2 02:02:00.123456 success 1m0s",
		"start a h1/4 db:4 02:05:00.123456",
		"end a h1/4 db:4 02:06:00.123456 failure 1m0s",
	)
	wantEvents(t, "after restart", second,
		"start a late/3 db:3 02:03:00.123456",
		"end a late/3 db:3 02:04:00.123456 success 1m0s",
		"end a h1/1 db:1 02:10:00.123456 success 10m0s",
		"start a h2/5 db:5 02:11:00.123456",
		"end a h2/5 db:5 02:12:00.123456 success 1m0s",
	)
	wantEvents(t, "then nothing", st2.step())
	if b := st2.sink.batches; len(b) > 0 && b[0].PositionResets != 0 {
		t.Errorf("PositionResets = %d", b[0].PositionResets)
	}

	// A position that cannot be read is a reset: first start again.
	st3 := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}}), json.RawMessage(`{"v":99}`))
	st3.step()
	if got := st3.lastBatch().PositionResets; got != 1 {
		t.Errorf("PositionResets = %d for an unreadable position, want 1", got)
	}
}

// testMySQLTruncated: a table emptied under jobwatch is a position reset.
func testMySQLTruncated(t *testing.T, f *fixture) {
	st := newStepper(t, f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}}), nil)
	st.step()
	f.run("a", "h", 1, 0, time.Second, "success")
	f.run("a", "h", 1, time.Minute, time.Minute+time.Second, "success")
	st.step()
	f.exec("TRUNCATE TABLE job_runs")
	f.run("a", "h", 2, time.Hour, time.Hour+time.Second, "success")
	got := st.step()
	wantEvents(t, "after truncate", got,
		"start a h/2 db:1 03:00:00.123456",
		"end a h/2 db:1 03:00:01.123456 success 1s",
	)
	if b := st.lastBatch(); b.PositionResets != 1 {
		t.Errorf("PositionResets = %d, want 1", b.PositionResets)
	}
}

func testMySQLFaults(t *testing.T, srv *mariadbtest.Server) {
	for _, tc := range []struct {
		name   string
		setup  func(f *fixture, src *testSource) // break things
		fix    func(f *fixture)                  // repair them (nil: cannot)
		reason string
	}{
		{
			name: "wrong password",
			setup: func(f *fixture, src *testSource) {
				user := f.srv.NewUser(f.t, "right-Pa55word", f.db)
				src.DSN = f.srv.Config(user, "wr0ng-Pa55word", f.db).FormatDSN()
			},
			reason: "access denied",
		},
		{
			name:   "missing table",
			setup:  func(f *fixture, src *testSource) { f.exec("RENAME TABLE job_runs TO job_runs_old") },
			fix:    func(f *fixture) { f.exec("RENAME TABLE job_runs_old TO job_runs") },
			reason: "table missing",
		},
		{
			name: "missing column",
			setup: func(f *fixture, src *testSource) {
				f.exec("ALTER TABLE job_runs CHANGE pid process_id INT UNSIGNED NULL")
			},
			fix:    func(f *fixture) { f.exec("ALTER TABLE job_runs CHANGE process_id pid INT UNSIGNED NULL") },
			reason: "column missing",
		},
		{
			name: "column of the wrong type",
			setup: func(f *fixture, src *testSource) {
				f.exec("ALTER TABLE job_runs MODIFY started_at VARCHAR(40) NOT NULL")
			},
			fix:    func(f *fixture) { f.exec("ALTER TABLE job_runs MODIFY started_at DATETIME(6) NOT NULL") },
			reason: "column type",
		},
		{
			name: "server down",
			setup: func(f *fixture, src *testSource) {
				src.DSN = "root:s3cret-Pa55@tcp(127.0.0.1:1)/" + f.db
			},
			reason: "connection",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, srv)
			src := f.sourceConfig("db")
			tc.setup(f, &src)
			logs := &logBuffer{}
			s := f.source(src, sources.Deps{Logger: logs.logger(), Jobs: []string{"a"}})

			if err := s.Check(context.Background()); err == nil {
				t.Error("Check: no error")
			} else if failureReason(err) != tc.reason {
				t.Errorf("Check: reason %q (%v), want %q", failureReason(err), err, tc.reason)
			} else if errors.Is(err, sources.ErrUnreachable) != (tc.reason == "connection") {
				t.Errorf("Check: errors.Is(%v, sources.ErrUnreachable) = %v", err, errors.Is(err, sources.ErrUnreachable))
			}

			polls := countPolls(s, 20*time.Millisecond)
			sink := &recordingSink{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx, nil, sink) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			})
			waitFor(t, "six failed polls", func() bool { return polls.Load() >= 6 })
			h, ok := sink.lastHealth()
			if !ok || h.up {
				t.Fatalf("health %+v, want down", h)
			}
			if got := failureReason(h.err); got != tc.reason {
				t.Errorf("reason %q (%v), want %q", got, h.err, tc.reason)
			}
			if n := logs.count("source down"); n != 1 {
				t.Errorf("%d 'source down' log lines after 6 failed polls, want 1:\n%s", n, logs)
			}
			for _, secret := range []string{"Pa55word", "Pa55"} {
				if strings.Contains(logs.String(), secret) || strings.Contains(fmt.Sprint(h.err), secret) {
					t.Errorf("secret in logs or error:\n%s\n%v", logs, h.err)
				}
			}
			if tc.fix == nil {
				return
			}
			// Repaired, the source comes up and reads what was written meanwhile.
			tc.fix(f)
			f.run("a", "h", 1, 0, time.Second, "success")
			waitFor(t, "source up", func() bool { h, _ := sink.lastHealth(); return h.up })
			waitFor(t, "the row", func() bool { return len(sink.events()) == 2 })
			if n := logs.count("source up again"); n != 1 {
				t.Errorf("%d 'source up again' log lines, want 1", n)
			}
			if err := s.Check(context.Background()); err != nil {
				t.Errorf("Check after repair: %v", err)
			}
		})
	}
}

func testMySQLInjection(t *testing.T, f *fixture) {
	for _, tc := range []struct{ field, yaml string }{
		{"table", "table: \"job_runs; DROP TABLE job_runs\""},
		{"table", "table: \"job_runs` WHERE 1=1 --\""},
		{"table", "table: \"a.b.c\""},
		{"table", "table: \"job runs\""},
		{"table", "table: \"1job_runs\""},
		{"columns.id", "columns: {id: \"id) OR (1=1\"}"},
		{"columns.job", "columns: {job: \"job_name`, (SELECT password FROM mysql.user) AS `x\"}"},
		{"columns.status", "columns: {status: \"status\\u0000\"}"},
		{"columns.host", "columns: {host: \"" + strings.Repeat("h", 65) + "\"}"},
		{"columns.pid", "columns: {pid: job_name}"},
	} {
		yml := "jobs: [{name: a, every: 1h}]\nsources:\n  - name: db\n    type: mysql\n    dsn: \"u:p@tcp(127.0.0.1:3306)/app\"\n    " + tc.yaml + "\n"
		_, err := config.Parse(strings.NewReader(yml))
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.field)
		}
	}
	// The same refusal from the constructor, for configs not parsed.
	src := f.sourceConfig("db")
	src.Table = "job_runs`; DROP TABLE job_runs; --"
	if _, err := newSource(src, sources.Deps{}); err == nil {
		t.Error("New accepted an injected table name")
	}
	// Values are bound: a status value full of quotes is just a value.
	src = f.sourceConfig("db")
	src.StatusValues = &StatusValues{Success: []string{"ok' OR '1'='1"}}
	f.run("a", "h", 1, 0, time.Second, "ok' OR '1'='1")
	f.run("a", "h", 2, time.Minute, time.Minute+time.Second, "success")
	st := newStepper(t, f.source(src, sources.Deps{Jobs: []string{"a"}}), nil)
	wantEvents(t, "quoted status value", st.step(),
		"start a h/1 db:1 02:00:00.123456",
		"end a h/1 db:1 02:00:01.123456 success 1s",
	)
	var n int
	if err := f.admin.QueryRow("SELECT COUNT(*) FROM job_runs").Scan(&n); err != nil || n != 2 {
		t.Errorf("table after: %d rows, %v", n, err)
	}
}

func testMySQLRedaction(t *testing.T, f *fixture) {
	user := f.srv.NewUser(t, "Sup3r$ecret", f.db)
	f.srv.Exec(t, "", "GRANT PROCESS ON *.* TO '"+user+"'@'%'") // the watermark's (docs/mysql.md)
	t.Setenv("JW_TEST_DB_PASSWORD", "N0t-the-Pa55")
	src := f.sourceConfig("db")
	src.DSN = user + ":${JW_TEST_DB_PASSWORD}@tcp(" + f.srv.Addr() + ")/" + f.db
	s := f.source(src, sources.Deps{})
	err := s.Check(context.Background())
	if err == nil || failureReason(err) != "access denied" {
		t.Fatalf("Check with the wrong password: %v", err)
	}
	for _, msg := range []string{err.Error(), s.String()} {
		if strings.Contains(msg, "N0t-the-Pa55") {
			t.Errorf("password in %q", msg)
		}
	}
	// The right one, from the environment.
	t.Setenv("JW_TEST_DB_PASSWORD", "Sup3r$ecret")
	if err := f.source(src, sources.Deps{}).Check(context.Background()); err != nil {
		t.Errorf("Check with the password from the environment: %v", err)
	}
	// From a file.
	dsnFile := filepath.Join(t.TempDir(), "db.dsn")
	if err := os.WriteFile(dsnFile, []byte(user+":Sup3r$ecret@tcp("+f.srv.Addr()+")/"+f.db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src.DSN, src.DSNFile = "", dsnFile
	if err := f.source(src, sources.Deps{}).Check(context.Background()); err != nil {
		t.Errorf("Check with dsn_file: %v", err)
	}
	// An unset variable, a DSN that does not parse: named, not shown.
	src.DSN, src.DSNFile = "u:${JW_TEST_UNSET_VAR}@tcp(h:1)/db", ""
	if _, err := newSource(src, sources.Deps{}); err == nil || !strings.Contains(err.Error(), "JW_TEST_UNSET_VAR") {
		t.Errorf("unset variable: %v", err)
	}
	src.DSN = "u:Pa55-in-bad-dsn@tcp(h:1)/db?loc=Nowhere/Zone"
	_, err = newSource(src, sources.Deps{})
	if err == nil || strings.Contains(err.Error(), "Pa55-in-bad-dsn") {
		t.Errorf("bad DSN error %v: want an error without the password", err)
	}
}

// TestMySQLServerRestart: the database server is killed and restarted while
// the source polls; the source reports down once, comes back, and counts
// every row once.
func TestMySQLServerRestart(t *testing.T) {
	srv := mariadbtest.Start(t)
	if srv.External() {
		t.Skip("needs a throwaway server")
	}
	f := newFixture(t, srv)
	logs := &logBuffer{}
	s := f.source(f.sourceConfig("db"), sources.Deps{Logger: logs.logger(), Jobs: []string{"a"}})
	polls := countPolls(s, 20*time.Millisecond)
	sink := &recordingSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// The server is down when the source starts.
	srv.Stop()
	go func() { done <- s.Run(ctx, nil, sink) }()
	waitFor(t, "source down", func() bool { h, ok := sink.lastHealth(); return ok && !h.up })
	srv.Start()
	waitFor(t, "source up", func() bool { h, ok := sink.lastHealth(); return ok && h.up })

	total := 0
	for round := range 3 {
		for i := range 5 {
			f.run("a", "h", round*10+i, time.Duration(total)*time.Second, time.Duration(total)*time.Second, "success")
			total++
		}
		open := f.start("a", "h", 999, time.Hour+time.Duration(round)*time.Minute)
		total++
		srv.Kill() // mid-poll: the source polls every 20ms
		waitFor(t, "source down", func() bool { h, _ := sink.lastHealth(); return !h.up })
		srv.Start()
		f.admin.SetMaxIdleConns(0) // drop the admin pool's dead connections
		f.admin.SetMaxIdleConns(2)
		f.finish(open, 2*time.Hour, "failure")
		waitFor(t, "source up", func() bool { h, _ := sink.lastHealth(); return h.up })
	}
	f.run("a", "h", 1000, 3*time.Hour, 3*time.Hour, "success")
	total++
	waitFor(t, "every run ended", func() bool {
		n := 0
		for _, e := range sink.events() {
			if e.Kind == model.End {
				n++
			}
		}
		return n >= total
	})
	waitPolls(t, polls, 3, "three more polls") // which repeat nothing
	starts, ends := map[string]int{}, map[string]int{}
	for _, e := range sink.events() {
		switch e.Kind {
		case model.Start:
			starts[e.RunID]++
		case model.End:
			ends[e.RunID]++
		}
	}
	if len(starts) != total || len(ends) != total {
		t.Errorf("%d runs started, %d ended, want %d", len(starts), len(ends), total)
	}
	for id, n := range starts {
		if n != 1 || ends[id] != 1 {
			t.Errorf("run %s: %d starts, %d ends", id, n, ends[id])
		}
	}
	if n := logs.count("source down"); n > 4*2 {
		t.Errorf("%d 'source down' lines for 3 restarts:\n%s", n, logs)
	}
	if n := logs.count("source up again"); n != 4 {
		t.Errorf("%d 'source up again' lines for a late start and 3 restarts, want 4", n)
	}
}

// TestMySQLNetworkCut: the network to the server goes silent (no refusal,
// no reset): polls time out, the source reports down once, and when the
// network is back it reads every row written meanwhile.
func TestMySQLNetworkCut(t *testing.T) {
	srv := mariadbtest.Start(t)
	f := newFixture(t, srv)
	proxy := newCutProxy(t, srv.Addr())
	src := f.sourceConfig("db")
	cfg := srv.Config("root", "", f.db)
	cfg.Addr = proxy.Addr()
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	src.DSN = cfg.FormatDSN()
	logs := &logBuffer{}
	s := f.source(src, sources.Deps{Logger: logs.logger(), Jobs: []string{"a"}})
	polls := countPolls(s, 20*time.Millisecond)
	sink := &recordingSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil, sink) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "source up", func() bool { h, ok := sink.lastHealth(); return ok && h.up })
	open := f.start("a", "h", 1, 0)
	waitFor(t, "the start", func() bool { return len(sink.events()) == 1 })

	proxy.Cut()
	waitFor(t, "source down", func() bool { h, _ := sink.lastHealth(); return !h.up })
	f.finish(open, time.Minute, "success")
	f.run("a", "h", 2, time.Hour, time.Hour+time.Second, "failure")
	waitPolls(t, polls, 3, "three polls that time out")
	if n := logs.count("source down"); n != 1 {
		t.Errorf("%d 'source down' lines during one cut, want 1:\n%s", n, logs)
	}
	proxy.Restore()
	waitFor(t, "source up", func() bool { h, _ := sink.lastHealth(); return h.up })
	waitFor(t, "rows written during the cut", func() bool { return len(sink.events()) == 4 })
	wantEvents(t, "after the cut", sink.take(),
		"start a h/1 db:1 02:00:00.123456",
		"end a h/1 db:1 02:01:00.123456 success 1m0s",
		"start a h/2 db:2 03:00:00.123456",
		"end a h/2 db:2 03:00:01.123456 failure 1s",
	)
}

func FuzzMySQLPosition(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":9,"open":[6],"gaps":[{"from":2,"to":4,"since":"2026-03-01T02:00:00Z"}]}`))
	f.Add([]byte(`{"v":1,"id":0}`))
	f.Add([]byte(`{"v":1,"id":5,"gaps":[{"from":6,"to":2}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseMySQLPosition(b)
		if err != nil {
			return
		}
		enc := p.encode()
		q, err := parseMySQLPosition(enc)
		if err != nil {
			t.Fatalf("re-reading %s: %v", enc, err)
		}
		if string(q.encode()) != string(enc) {
			t.Fatalf("not stable: %s then %s", enc, q.encode())
		}
		// Removing found ids never widens a gap.
		var found []int64
		for _, g := range p.Gaps {
			found = append(found, g.From, (g.From+g.To)/2)
		}
		for _, g := range removeFound(p.Gaps, found) {
			if g.To < g.From {
				t.Fatalf("empty gap %+v", g)
			}
		}
	})
}

func FuzzMySQLDSN(f *testing.F) {
	f.Add("u:p@tcp(h:3306)/db", "p")
	f.Add("u:${PW}@tcp(h:3306)/db?loc=Local", "x")
	f.Add("u:pa:ss@word@unix(/s)/db?bad", "pa:ss@word")
	f.Fuzz(func(t *testing.T, dsn, pw string) {
		getenv := func(string) (string, bool) { return pw, true }
		_, red, err := secret.LoadMySQL(secret.MySQL{DSN: dsn, Getenv: getenv}, slog.New(slog.DiscardHandler))
		if err != nil && strings.Contains(dsn, "${PW}") && len(pw) > 3 && strings.Contains(err.Error(), pw) {
			t.Fatalf("password %q in error %q", pw, err)
		}
		_ = red.String(dsn)
	})
}

// FuzzMySQLIdent: whatever a config names, a table or column name that
// passes validation is a plain identifier, which its quoting cannot let out.
func FuzzMySQLIdent(f *testing.F) {
	f.Add("job_runs", "id")
	f.Add("app.job_runs", "job_name")
	f.Add("x`; DROP TABLE y; --", "a) OR (1=1")
	f.Add("a.b.c", "status\x00")
	f.Fuzz(func(t *testing.T, table, col string) {
		c := Config{DSN: "u:p@/db", Table: table, Columns: &Columns{Status: col}}
		if len(c.Validate()) > 0 {
			return
		}
		for _, name := range []string{c.TableName(), c.ColumnNames().Status} {
			for _, r := range name {
				if !(r == '_' || r == '$' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
					t.Fatalf("accepted %q", name)
				}
			}
		}
		s, err := newSource(testSource{Name: "db", Config: c}, sources.Deps{})
		if err != nil {
			t.Fatalf("New after Validate passed: %v", err)
		}
		if strings.Count(s.table, "`")%2 != 0 || strings.Count(s.selectList, "`") != 14 {
			t.Fatalf("quoting broken: %s / %s", s.table, s.selectList)
		}
	})
}

// late_window, as every source of runs has it.
func TestMySQLLateWindowKey(t *testing.T) {
	sourcetest.LateWindowKey(t, sourcetest.LateWindow{
		Head: "  - name: db\n    type: mysql\n", Name: "db",
		Valid: []string{"dsn: u:p@tcp(db:3306)/app"}, BrokenErr: "exactly one of dsn and dsn_file is required",
		Default: DefaultLateWindow,
	})
}
