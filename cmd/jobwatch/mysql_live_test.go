package main

// Rows stamped when they are written, read by a mysql source whose
// watermark comes from the database (docs/mysql.md, "Watermark"): a job
// recorded only in job_runs, and check-ins stored in the table by two
// replicas, show within 2 s and are never judged stale.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// liveLimit is how soon a row or an acknowledged check-in has to show.
const liveLimit = 2 * time.Second

// shownAfter scrapes in until ok holds of /metrics and returns how long
// that took from since; it fails the test past minWait, and calls bad on
// every scrape (a sample that must never show).
func shownAfter(in *instance, since time.Time, what string, ok func(map[string]float64) bool, bad func(map[string]float64)) time.Duration {
	in.t.Helper()
	var took time.Duration
	testproc.EventuallyEvery(in.t, minWait, 10*time.Millisecond, what, func() error {
		got, _ := in.scrape()
		if bad != nil {
			bad(got)
		}
		if !ok(got) {
			return fmt.Errorf("not on /metrics of %s", in.addr)
		}
		took = time.Since(since)
		return nil
	})
	return took
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestMySQLLiveJob: a job succeeding every 10 s, with every: 20s,
// recorded only in a job_runs table (a row inserted when a run starts and
// updated when it ends, stamped then) is never stale over 90 s, a run in
// progress shows running within 2 s, each run's end is counted on
// /metrics within 2 s, and no row is late. It logs the median,
// BENCHMARKS.md's figure.
func TestMySQLLiveJob(t *testing.T) {
	t.Parallel()
	srv, db := haDatabase(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	// JOBWATCH_BENCH_MYSQL_POLL measures at another poll interval (the
	// default 5s, for BENCHMARKS.md); each row may then take that much
	// longer.
	poll := 200 * time.Millisecond
	if v := os.Getenv("JOBWATCH_BENCH_MYSQL_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("JOBWATCH_BENCH_MYSQL_POLL: %v", err)
		}
		poll = d
	}
	limit := liveLimit + max(0, poll-200*time.Millisecond)
	testproc.WriteFile(t, cfg, fmt.Sprintf(`jobs:
  - name: tick
    every: 20s
sources:
  - name: runs
    type: mysql
    dsn: %q
    poll_interval: %s
`, srv.RootDSN(db), poll))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	in.waitFor(30*time.Second, map[string]float64{`jobwatch_source_up{source="runs",type="mysql"}`: 1})
	conn := srv.DB(t, db)
	neverStale := func(got map[string]float64) {
		if got[`jobwatch_job_stale{job_name="tick"}`] != 0 {
			t.Fatalf("tick stale at %s although it succeeds every 10 s", time.Now().Format(time.StampMilli))
		}
	}

	// Each run is a row inserted when it starts and updated when it ends,
	// as jobwatch run --record-mysql writes them; one runs every 10 s.
	startRun := func(pid int) (int64, time.Time) {
		t.Helper()
		at := time.Now().UTC()
		res, err := conn.Exec("INSERT INTO job_runs (job_name, started_at, host, pid) VALUES ('tick', ?, 'web1', ?)", at, pid)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id, at
	}
	id, began := startRun(1000)
	if d := shownAfter(in, began, "the first run in progress", func(got map[string]float64) bool {
		return got[`jobwatch_job_running{job_name="tick"}`] == 1
	}, neverStale); d > limit {
		t.Errorf("run in progress shown after %s, want within %s", d.Round(time.Millisecond), limit)
	}
	const runs = 10 // ends 10 s apart, 90 s from the first to the last
	var took []time.Duration
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for i := range runs {
		<-tick.C // the job's own pace, not a wait for jobwatch
		end := time.Now().UTC()
		if _, err := conn.Exec("UPDATE job_runs SET finished_at = ?, status = 'success' WHERE id = ?", end, id); err != nil {
			t.Fatal(err)
		}
		if i < runs-1 {
			id, _ = startRun(1001 + i)
		}
		d := shownAfter(in, end, fmt.Sprintf("run %d counted", i+1), func(got map[string]float64) bool {
			return got[`jobwatch_job_runs_total{job_name="tick",result="success"}`] == float64(i+1)
		}, neverStale)
		took = append(took, d)
		if d > limit {
			t.Errorf("run %d counted after %s, want within %s", i+1, d.Round(time.Millisecond), limit)
		}
	}
	t.Logf("job_runs rows on /metrics (poll_interval %s): median %s, max %s over %d", poll, median(took).Round(time.Millisecond), slices.Max(took).Round(time.Millisecond), runs)
	got := in.waitFor(limit, map[string]float64{`jobwatch_job_running{job_name="tick"}`: 0})
	if n := got[`jobwatch_source_late_records_total{source="runs"}`]; n != 0 {
		t.Errorf("%v late records, want 0", n)
	}
}

// TestCheckinReplicasLive: check-ins stored by two replicas in one table
// (store: mysql) with the mysql source's defaults: every acknowledged
// start shows running, and every acknowledged end shows counted, on both
// replicas within 2 s.
func TestCheckinReplicasLive(t *testing.T) {
	t.Parallel()
	srv, db := haDatabase(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	dsn := srv.RootDSN(db)
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: burst
    every: 1h
    scope: cluster
checkins:
  enabled: true
  store: mysql
  mysql_dsn: %q
  table: job_runs
sources:
  - name: shared
    type: mysql
    dsn: %q
    table: job_runs
    poll_interval: 100ms
`, dsn, dsn))
	up := map[string]float64{`jobwatch_source_up{source="shared",type="mysql"}`: 1}
	replicas := []*instance{
		startJobwatch(t, bin, cfg, filepath.Join(dir, "a"), freePort(t)),
		startJobwatch(t, bin, cfg, filepath.Join(dir, "b"), freePort(t)),
	}
	for _, in := range replicas {
		in.waitFor(30*time.Second, up)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	const runs = 20
	var took []time.Duration
	for i := range runs {
		rid := newRID(t)
		for _, step := range []struct {
			path string
			want map[string]float64
		}{
			{"start", map[string]float64{`jobwatch_job_running{job_name="burst"}`: 1}},
			{"0", map[string]float64{`jobwatch_job_running{job_name="burst"}`: 0, `jobwatch_job_runs_total{job_name="burst",result="success"}`: float64(i + 1)}},
		} {
			to := replicas[i%2]
			mustPing(t, client, "http://"+to.addr+"/ping/burst/"+step.path+"?rid="+rid, "")
			acked := time.Now()
			for _, in := range replicas {
				d := shownAfter(in, acked, fmt.Sprintf("run %d's %s check-in", i+1, step.path), func(got map[string]float64) bool {
					for k, v := range step.want {
						if got[k] != v {
							return false
						}
					}
					return true
				}, nil)
				took = append(took, d)
				if d > liveLimit {
					t.Errorf("run %d's %s check-in (acknowledged by %s) shown by %s after %s, want within %s", i+1, step.path, to.addr, in.addr, d.Round(time.Millisecond), liveLimit)
				}
			}
		}
	}
	t.Logf("acknowledged check-ins on both replicas' /metrics: median %s, max %s over %d", median(took).Round(time.Millisecond), slices.Max(took).Round(time.Millisecond), len(took))
}
