package mysql

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
)

// TestMySQLWatermark runs the watermark's tests on one
// throwaway server, on this host's real clock.
func TestMySQLWatermark(t *testing.T) {
	srv := mariadbtest.Start(t)
	t.Run("OpenTransaction", func(t *testing.T) { testWatermarkOpenTransaction(t, newFixture(t, srv)) })
	t.Run("NoProcessPrivilege", func(t *testing.T) { testWatermarkNoProcess(t, newFixture(t, srv)) })
	t.Run("SessionZone", func(t *testing.T) { testWatermarkSessionZone(t, newFixture(t, srv)) })
	t.Run("FixedLateWindow", func(t *testing.T) {
		f := newFixture(t, srv)
		src := f.sourceConfig("db")
		src.Lateness = config.Duration(time.Minute)
		st := newStepper(t, f.source(src, sources.Deps{}), nil)
		st.step()
		if b := st.lastBatch(); !b.Watermark.IsZero() {
			t.Errorf("late_window set: batch watermark %v, want none (the fixed window)", b.Watermark)
		}
	})
}

// watermarkNear fails unless the batch's watermark is at the clock less
// the margin, from before its poll to after it (less up to slop more: a
// transaction's start is read in whole seconds).
func watermarkNear(t *testing.T, what string, b model.Batch, before, after time.Time, slop time.Duration) {
	t.Helper()
	lo, hi := before.Add(-WatermarkMargin-slop-10*time.Millisecond), after.Add(-WatermarkMargin)
	if !b.AtEnd || b.Watermark.Before(lo) || b.Watermark.After(hi) {
		t.Errorf("%s: batch AtEnd %v watermark %s, want from %s to %s", what, b.AtEnd,
			b.Watermark.Format(time.StampMicro), lo.Format(time.StampMicro), hi.Format(time.StampMicro))
	}
}

// stepFresh polls at a poll interval's pace until a poll reads innodb_trx
// refreshed after after (reads less than 0.1 s apart keep it from being),
// and returns its batch.
func stepFresh(t *testing.T, st *stepper, after time.Time) model.Batch {
	t.Helper()
	var b model.Batch
	testproc.EventuallyEvery(t, 30*time.Second, 150*time.Millisecond, "a poll that reads innodb_trx refreshed", func() error {
		st.step()
		if b = st.lastBatch(); !st.r.trx.fresh.After(after) {
			return errors.New("stale")
		}
		return nil
	})
	return b
}

// testWatermarkOpenTransaction: a transaction holding an uncommitted row
// older than a committed one holds the watermark back, and its gap is
// looked for past the late window; committed, the row is counted by the
// tracker once, not late.
func testWatermarkOpenTransaction(t *testing.T, f *fixture) {
	s := f.source(f.sourceConfig("db"), sources.Deps{Jobs: []string{"a"}})
	s.late = 300 * time.Millisecond // the fallback, short to outlast
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{{Name: "a", Schedule: schedule.Every(time.Hour), Scope: "cluster", StaleMultiple: 2}},
		[]model.SourceSpec{{Name: "db", Type: Type, Runs: true, LateWindow: s.late}})
	st := newStepper(t, s, nil)
	step := func() model.Batch {
		t.Helper()
		st.step()
		b := st.lastBatch()
		tr.Apply(b)
		return b
	}
	before := time.Now()
	b := stepFresh(t, st, before)
	tr.Apply(b)
	watermarkNear(t, "no transaction open", b, before, time.Now(), 150*time.Millisecond)

	tx, err := f.admin.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	older := time.Now().UTC()
	if _, err := tx.Exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid) VALUES ('a', ?, ?, 'success', 'slow', 1)", older, older); err != nil {
		t.Fatal(err)
	}
	inserted := time.Now()
	newer := time.Now().UTC()
	f.exec("INSERT INTO job_runs (job_name, started_at, finished_at, status, host, pid) VALUES ('a', ?, ?, 'success', 'fast', 2)", newer, newer)
	b = step()
	watermarkNear(t, "a transaction open", b, older, inserted, time.Second)
	if len(b.Events) != 2 || len(st.r.pos.Gaps) != 1 {
		t.Fatalf("the committed row: %d events, gaps %+v; want 2 and the open row's id", len(b.Events), st.r.pos.Gaps)
	}
	since := st.r.pos.Gaps[0].Since
	// Polled at a poll interval's pace from here: innodb_trx is refreshed
	// only for a reader that waits 0.1 s.
	polled := func(what string, cond func() bool) {
		t.Helper()
		testproc.EventuallyEvery(t, 30*time.Second, 150*time.Millisecond, what, func() error {
			if cond() {
				return nil
			}
			return errors.New("not yet")
		})
	}
	fresh := false
	polled("the late window to pass with the transaction open, read fresh", func() bool {
		b := step()
		if len(st.r.pos.Gaps) != 1 || b.Watermark.After(inserted.Add(-WatermarkMargin)) {
			t.Fatalf("transaction open: gaps %+v, watermark %s; want the gap kept, the watermark before %s",
				st.r.pos.Gaps, b.Watermark.Format(time.StampMicro), inserted.Add(-WatermarkMargin).Format(time.StampMicro))
		}
		fresh = fresh || st.r.trx.fresh.After(since)
		return fresh && time.Since(since) > 2*s.late
	})
	tr.Reap()
	if jobs, _ := tr.View(); len(jobs[0].Pending) != 2 {
		t.Errorf("%d records held while the older row is uncommitted, want the newer row's 2", len(jobs[0].Pending))
	}

	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b = step()
	if len(b.Events) != 2 || len(st.r.pos.Gaps) != 0 {
		t.Fatalf("committed: %d events, gaps %+v; want the row's 2, none", len(b.Events), st.r.pos.Gaps)
	}
	polled("the watermark past the rows", func() bool { return step().Watermark.After(newer) })
	tr.Reap()
	jobs, srcs := tr.View()
	if n := jobs[0].RunCounts[slices.Index(model.Results, model.Success)]; n != 2 || srcs[0].LateRecords != 0 {
		t.Errorf("%d successes, %d late records; want 2 and 0", n, srcs[0].LateRecords)
	}
}

// testWatermarkNoProcess: a user without PROCESS cannot read innodb_trx:
// the batches carry no watermark (the late window applies), said once.
func testWatermarkNoProcess(t *testing.T, f *fixture) {
	user := f.srv.NewUser(t, "Pa55-word", f.db)
	src := f.sourceConfig("db")
	src.DSN = user + ":Pa55-word@tcp(" + f.srv.Addr() + ")/" + f.db
	logs := &logBuffer{}
	st := newStepper(t, f.source(src, sources.Deps{Logger: logs.logger()}), nil)
	for range 3 {
		st.step()
		if b := st.lastBatch(); !b.AtEnd || !b.Watermark.IsZero() {
			t.Fatalf("without PROCESS: AtEnd %v watermark %v, want at its end without one", b.AtEnd, b.Watermark)
		}
	}
	if n := logs.count("grant PROCESS"); n != 1 {
		t.Errorf("%d warnings to grant PROCESS over 3 polls, want 1:\n%s", n, logs)
	}
	if h, ok := st.sink.lastHealth(); !ok || !h.up {
		t.Errorf("source health %+v (%v), want up", h, ok)
	}
	// check-config says so.
	s := f.source(src, sources.Deps{})
	var w sources.Warning
	if err := s.Check(context.Background()); !errors.As(err, &w) || !strings.Contains(string(w), "grant PROCESS") || strings.Contains(string(w), "Pa55-word") {
		t.Errorf("Check without PROCESS: %v; want a warning to grant it, without the password", err)
	}
	root := f.source(f.sourceConfig("db"), sources.Deps{})
	if err := root.Check(context.Background()); err != nil {
		t.Errorf("Check with PROCESS: %v, want nil", err)
	}
}

// testWatermarkSessionZone: a session zone 7 hours behind (NOW() read in
// the DSN's UTC) moves neither the watermark nor the transaction's age:
// the watermark is still the transaction's start less the margin, and the
// database clock read in the wrong zone is said once.
func testWatermarkSessionZone(t *testing.T, f *fixture) {
	src := f.sourceConfig("db")
	sep := "?"
	if strings.Contains(src.DSN, "?") {
		sep = "&"
	}
	src.DSN += sep + "time_zone=%27-07%3A00%27"
	logs := &logBuffer{}
	st := newStepper(t, f.source(src, sources.Deps{Logger: logs.logger()}), nil)
	tx, err := f.admin.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	began := time.Now()
	if _, err := tx.Exec("INSERT INTO job_runs (job_name, started_at, host) VALUES ('a', UTC_TIMESTAMP(), 'h')"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b := stepFresh(t, st, began)
		watermarkNear(t, "session zone -07:00, a transaction open", b, began, time.Now(), time.Second)
	}
	if n := logs.count("far from this host's"); n != 1 {
		t.Errorf("%d warnings of the clock read in the wrong zone, want 1:\n%s", n, logs)
	}
}
