package main

// Check-ins with store: mysql (docs/checkins.md, "High availability"): two
// replicas on one job_runs table, one killed mid-burst, its clients
// retrying on the other; the database hung.

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// haConfig is a replica's config: check-ins stored in the table, and the
// table read back by a mysql source.
func haConfig(t *testing.T, dir, dsn string) string {
	t.Helper()
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: burst
    every: 1h
    scope: cluster
  - name: other
    every: 1h
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
    late_window: 2s
`, dsn, dsn))
	return cfg
}

// haDatabase is a throwaway server with examples/job_runs.sql's table.
func haDatabase(t *testing.T) (*mariadbtest.Server, string) {
	t.Helper()
	srv := mariadbtest.Start(t)
	return srv, srv.JobRunsDatabase(t)
}

// failover sends a check-in to the replica a client uses and, while it is
// not acknowledged (refused, 503, no answer), to the other one, as a
// client behind a load balancer retries; it reports whether it was
// acknowledged within a minute.
type failover struct {
	client *http.Client
	bases  [2]string
}

func (f *failover) send(cur *int, path string) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := f.client.Get(f.bases[*cur] + path)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		*cur = 1 - *cur
	}
	return false
}

// TestCheckinReplicasKill: 32 clients spread 2,000 check-ins (1,000 runs,
// a start and an end with a run id each) over two replicas; one is killed
// with SIGKILL halfway through and its clients retry on the other.
// Afterwards the table holds every run once, the surviving replica counts
// each once, and so does the killed one once restarted (it catches up from
// the table).
func TestCheckinReplicasKill(t *testing.T) {
	t.Parallel()
	srv, db := haDatabase(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := haConfig(t, dir, srv.RootDSN(db))
	up := map[string]float64{`jobwatch_source_up{source="shared",type="mysql"}`: 1}
	a := startJobwatch(t, bin, cfg, filepath.Join(dir, "a"), freePort(t))
	b := startJobwatch(t, bin, cfg, filepath.Join(dir, "b"), freePort(t))
	a.waitFor(30*time.Second, up)
	b.waitFor(30*time.Second, up)

	const runs, clients = 1000, 32
	f := &failover{client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}},
		bases: [2]string{"http://" + a.addr, "http://" + b.addr}}
	var (
		next, acked atomic.Int64
		kill        sync.Once
		killedAt    int64
		wg          sync.WaitGroup
	)
	began := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur := c % 2
			for i := int(next.Add(1) - 1); i < runs; i = int(next.Add(1) - 1) {
				rid := newRID(t)
				if !f.send(&cur, "/ping/burst/start?rid="+rid) || !f.send(&cur, fmt.Sprintf("/ping/burst/%d?rid=%s", i%2, rid)) {
					t.Errorf("run %d: a check-in not acknowledged by either replica", i)
					return
				}
				if acked.Add(2) >= runs {
					kill.Do(func() {
						a.cmd.Process.Signal(syscall.SIGKILL)
						killedAt = acked.Load()
					})
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	a.cmd.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if killedAt >= 2*runs {
		t.Fatalf("the replica was killed after the burst (%d check-ins acknowledged)", killedAt)
	}
	t.Logf("%d check-ins from %d clients over two replicas in %s (%.0f/s), one killed after %d", 2*runs, clients, took.Round(time.Millisecond), 2*runs/took.Seconds(), killedAt)

	// The table: every run once, finished.
	var rows, distinct, open, failures int
	must(t, srv.DB(t, db).QueryRow(`SELECT COUNT(*), COUNT(DISTINCT run_id), SUM(finished_at IS NULL), SUM(status = 'failure')
FROM job_runs WHERE job_name = 'burst'`).Scan(&rows, &distinct, &open, &failures))
	if rows != runs || distinct != runs || open != 0 || failures != runs/2 {
		t.Fatalf("table: %d rows, %d run ids, %d open, %d failures; want %d, %d, 0, %d", rows, distinct, open, failures, runs, runs, runs/2)
	}
	want := map[string]float64{
		`jobwatch_job_runs_total{job_name="burst",result="success"}`: runs / 2,
		`jobwatch_job_runs_total{job_name="burst",result="failure"}`: runs / 2,
		`jobwatch_job_running{job_name="burst"}`:                     0,
		`jobwatch_source_parse_errors_total{source="shared"}`:        0,
	}
	b.waitFor(60*time.Second, want)
	a = startJobwatch(t, bin, cfg, filepath.Join(dir, "a"), freePort(t))
	a.waitFor(60*time.Second, want)
	for _, in := range []*instance{a, b} {
		if got, _ := in.scrape(); got[`jobwatch_source_records_total{source="checkin"}`] != 0 {
			t.Errorf("replica %s applied %v check-ins locally besides the table", in.addr, got[`jobwatch_source_records_total{source="checkin"}`])
		}
	}

	// A check-in's output, posted to one replica, is on the other's job
	// page too: the table's output column, read back by its mysql source.
	const output = "copying /srv\ndisk full on /var\n"
	mustPing(t, f.client, "http://"+b.addr+"/ping/other/3?rid="+newRID(t), output)
	testproc.Eventually(t, minWait, "the output in the other replica's job API", func() error {
		var job struct {
			RecentRuns []struct {
				Output string `json:"output"`
			} `json:"recent_runs"`
		}
		getJSON(t, "http://"+a.addr+"/api/v1/jobs/other", &job)
		if len(job.RecentRuns) == 0 || job.RecentRuns[0].Output != output {
			return fmt.Errorf("recent runs %+v, want one with output %q", job.RecentRuns, output)
		}
		return nil
	})
}

// TestCheckinReplicaDatabaseHung: with the database stopped (SIGSTOP) a
// check-in is answered 503 within 5 s, the client to retry; once the
// database continues, check-ins are accepted and read back.
func TestCheckinReplicaDatabaseHung(t *testing.T) {
	t.Parallel()
	srv, db := haDatabase(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	in := startJobwatch(t, bin, haConfig(t, dir, srv.RootDSN(db)), filepath.Join(dir, "state"), freePort(t))
	in.waitFor(30*time.Second, map[string]float64{`jobwatch_source_up{source="shared",type="mysql"}`: 1})
	base := "http://" + in.addr
	client := &http.Client{Timeout: 30 * time.Second}
	mustPing(t, client, base+"/ping/burst?rid="+newRID(t), "")

	resume := srv.Hang()
	began := time.Now()
	code, msg := ping(t, client, "GET", base+"/ping/other", "", nil)
	if took := time.Since(began); code != http.StatusServiceUnavailable || took > 5*time.Second {
		t.Fatalf("database hung: %d %q after %s, want 503 within 5s", code, msg, took)
	}
	if got, _ := in.scrape(); got[`jobwatch_checkins_not_saved_total{store="mysql"}`] != 1 {
		t.Errorf("jobwatch_checkins_not_saved_total{store=\"mysql\"} = %v, want 1", got[`jobwatch_checkins_not_saved_total{store="mysql"}`])
	}
	resume()
	rid := newRID(t)
	testproc.Eventually(t, minWait, "a check-in accepted once the database continues", func() error {
		if code, msg := ping(t, client, "GET", base+"/ping/burst?rid="+rid, "", nil); code != http.StatusOK {
			return fmt.Errorf("%d %q", code, msg)
		}
		return nil
	})
	in.waitFor(60*time.Second, map[string]float64{`jobwatch_job_runs_total{job_name="burst",result="success"}`: 2})
	var n int
	must(t, srv.DB(t, db).QueryRow("SELECT COUNT(*) FROM job_runs WHERE job_name = 'burst'").Scan(&n))
	if n != 2 {
		t.Fatalf("%d rows of burst, want 2", n)
	}
}
