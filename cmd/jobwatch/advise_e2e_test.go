package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
)

const adviseConfig = `
jobs:
  - name: billing
    every: 1h
    timeout: 10m
sources:
  - name: runs
    type: runlog
    path: %s
    format: json
`

// TestAdviseShowsLockTTL: the lock TTL goes from jobwatch run's start record
// through the runlog source, the model and the saved state to `jobwatch
// advise`. Twenty runs of 3 minutes written before (without a lease), then
// one real `jobwatch run --lock-redis --lock-ttl 2m` against a redis-server
// the test starts: advise shows the 2m lease, and says that it lasts
// through a run only because it is renewed; a restarted jobwatch still
// knows it.
func TestAdviseShowsLockTTL(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv := redistest.Start(t, "")
	dir := t.TempDir()
	log := runLog{t, filepath.Join(dir, "runs.log")}
	cfg := writeConfig(t, dir, fmt.Sprintf(adviseConfig, log.path))
	stateDir, addr := filepath.Join(dir, "state"), freePort(t)

	now := time.Now().Truncate(time.Second)
	var lines []string
	for i := 20; i >= 1; i-- {
		start := now.Add(-time.Duration(i) * time.Hour)
		lines = append(lines, rec(start, "billing", "start", 1000+i, ""),
			rec(start.Add(3*time.Minute), "billing", "end", 1000+i, `"status":"success","exit_code":0,"duration_seconds":180`))
	}
	log.append(lines...)
	in := startJobwatch(t, bin, cfg, stateDir, addr)
	in.waitFor(30*time.Second, map[string]float64{`jobwatch_source_records_total{source="runs"}`: 40})
	if row := adviseRow(t, bin, addr); row["LOCK TTL"] != "-" || strings.Contains(row["ADVICE"], "lock TTL") {
		t.Errorf("before any run with a lease: %q", row)
	}

	if c := jobwatchRun(t, bin, "--job", "billing", "--log", log.path, "--lock-redis", srv.URL(), "--lock-ttl", "2m", "--", "true"); c != 0 {
		t.Fatalf("jobwatch run: exit %d", c)
	}
	in.waitFor(30*time.Second, map[string]float64{
		`jobwatch_source_records_total{source="runs"}`:                 42,
		`jobwatch_job_runs_total{job_name="billing",result="success"}`: 21,
	})
	check := func(when string) {
		t.Helper()
		row := adviseRow(t, bin, addr)
		if row["RUNS"] != "21" || row["MAX"] != "3m" || row["LOCK TTL"] != "2m" || row["SUGGESTED LOCK TTL"] != "6m" ||
			!strings.Contains(row["ADVICE"], "lock TTL 2m is shorter than the longest run (3m): the lock lasts through a run only because jobwatch run renews it every 40s;") {
			t.Errorf("%s: advise row %q", when, row)
		}
		out, err := exec.Command(bin, "status", "--url", "http://"+addr, "--job", "billing", "--format", "json").Output()
		var rep struct {
			Jobs []struct {
				LockTTL *float64 `json:"lock_ttl_seconds"`
			} `json:"jobs"`
		}
		if err != nil || json.Unmarshal(out, &rep) != nil || len(rep.Jobs) != 1 || rep.Jobs[0].LockTTL == nil || *rep.Jobs[0].LockTTL != 120 {
			t.Errorf("%s: status --format json: %v\n%s", when, err, out)
		}
	}
	check("after the run")

	// Saved with the state: a restarted jobwatch reads nothing new and
	// still knows the lease.
	in.kill(syscall.SIGTERM)
	startJobwatch(t, bin, cfg, stateDir, addr).waitFor(30*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="billing",result="success"}`: 21,
	})
	check("after a restart")
}

// adviseRow runs `jobwatch advise --job billing` and returns its one row by
// column name (tabwriter pads columns with two spaces or more; no cell has
// two spaces in a row).
func adviseRow(t *testing.T, bin, addr string) map[string]string {
	t.Helper()
	out, err := exec.Command(bin, "advise", "--url", "http://"+addr, "--job", "billing").CombinedOutput()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err != nil || len(lines) != 2 {
		t.Fatalf("jobwatch advise: %v\n%s", err, out)
	}
	sep := regexp.MustCompile(`\s{2,}`)
	head, cells := sep.Split(lines[0], -1), sep.Split(lines[1], -1)
	if len(head) != len(cells) {
		t.Fatalf("jobwatch advise: %d columns, %d cells:\n%s", len(head), len(cells), out)
	}
	row := map[string]string{}
	for i, h := range head {
		row[h] = cells[i]
	}
	return row
}
