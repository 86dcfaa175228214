package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestFIFOAtRunLogPath: a named pipe at a run log's path is a source that is
// down, logged once; the other sources read on, a reload answers and SIGTERM
// stops the process, as they did before the pipe hung its source for good.
func TestFIFOAtRunLogPath(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.log")
	must(t, syscall.Mkfifo(pipe, 0o644))
	good := runLog{t, filepath.Join(dir, "runs.log")}
	good.append(success(time.Now().Add(-time.Hour).Truncate(time.Second), "stats", 100)...)
	cfg := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfg, fmt.Sprintf(`
jobs:
  - name: stats
    every: 1h
sources:
  - name: pipe
    type: runlog
    path: %s
    format: json
  - name: runs
    type: runlog
    path: %s
    format: json
`, pipe, good.path))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	// The pipe never reads: the job's run is decided once the pipe has had
	// its 10 s to read anything (docs/schedules.md, start-up).
	in.waitFor(20*time.Second, map[string]float64{
		`jobwatch_source_up{source="pipe",type="runlog"}`:            0,
		`jobwatch_source_up{source="runs",type="runlog"}`:            1,
		`jobwatch_job_runs_total{job_name="stats",result="success"}`: 1,
	})
	reloaded := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+in.addr+"/-/reload", "", nil)
		if err != nil {
			reloaded <- 0
			return
		}
		resp.Body.Close()
		reloaded <- resp.StatusCode
	}()
	if code := testproc.Receive(t, reloaded, minWait, "the reload's answer"); code != http.StatusOK {
		t.Errorf("reload answered %d, want 200", code)
	}
	if n := strings.Count(in.logs.String(), "not a regular file (named pipe)"); n < 1 {
		t.Errorf("the pipe was never logged\n%s", in.logs.String())
	}
	exited := make(chan struct{})
	go func() { in.kill(syscall.SIGTERM); close(exited) }()
	testproc.Receive(t, exited, minWait, "jobwatch to stop after SIGTERM")
}
