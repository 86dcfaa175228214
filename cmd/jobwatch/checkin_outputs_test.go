package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestCheckinOutputsWrittenOnce: a check-in's output is written once, in
// the spool, and referenced from the state: 1,000 failures of 10 KiB
// output over 40 jobs (each keeps 50 runs) make jobwatch write under 4x
// their bytes in all; the job list carries excerpts of its jobs' latest 20
// runs and pages, a job's API carries its outputs whole.
func TestCheckinOutputsWrittenOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 check-ins of 10 KiB through the real binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	var b strings.Builder
	b.WriteString("jobs:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "  - name: out%02d\n    every: 1h\n", i)
	}
	b.WriteString("checkins:\n  enabled: true\n")
	testproc.WriteFile(t, cfg, b.String())
	stateDir := filepath.Join(dir, "state")
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	base := "http://" + in.addr
	const n, size = 1000, 10 << 10
	client := &http.Client{Timeout: time.Minute}
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += 4 {
				head, end := fmt.Sprintf("run %d of out%02d\n", i, i%40), "\nend\n"
				mustPing(t, client, fmt.Sprintf("%s/ping/out%02d/1?rid=%s", base, i%40, newRID(t)), head+strings.Repeat("x", size-len(head)-len(end))+end)
			}
		}()
	}
	wg.Wait()
	want := map[string]float64{`jobwatch_source_records_total{source="checkin"}`: n}
	for i := range 40 {
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name="out%02d",result="failure"}`, i)] = n / 40
	}
	in.waitFor(60*time.Second, want) // decided: after the start-up hold

	io := procIO(t, in.cmd.Process.Pid)
	t.Logf("%d check-ins of %d bytes (%d in all): wchar %d (%.2fx), write_bytes %d (%.2fx)",
		n, size, n*size, io["wchar"], float64(io["wchar"])/float64(n*size), io["write_bytes"], float64(io["write_bytes"])/float64(n*size))
	if io["wchar"] >= 4*n*size {
		t.Errorf("jobwatch wrote %d bytes for %d bytes of outputs: 4x or more", io["wchar"], n*size)
	}

	// The job list: excerpts of the latest 20 runs, in pages.
	var list struct {
		Jobs []struct {
			Name       string `json:"name"`
			RecentRuns []struct {
				Output string `json:"output"`
			} `json:"recent_runs"`
		} `json:"jobs"`
		Next string `json:"next"`
	}
	getJSON(t, base+"/api/v1/jobs?limit=30", &list)
	if len(list.Jobs) != 30 || list.Next != "out29" {
		t.Fatalf("first page: %d jobs, next %q; want 30, out29", len(list.Jobs), list.Next)
	}
	for _, j := range list.Jobs {
		if len(j.RecentRuns) != 20 || len(j.RecentRuns[0].Output) > 1024 || !strings.HasSuffix(j.RecentRuns[0].Output, "x\nend\n") {
			t.Fatalf("%s in the list: %d runs, an output of %d bytes; want 20, at most 1 KiB, its end", j.Name, len(j.RecentRuns), len(j.RecentRuns[0].Output))
		}
	}
	after := list.Next
	list.Jobs, list.Next = nil, ""
	getJSON(t, base+"/api/v1/jobs?limit=30&after="+after, &list)
	if len(list.Jobs) != 10 || list.Next != "" {
		t.Errorf("second page: %d jobs, next %q; want 10 and none", len(list.Jobs), list.Next)
	}
	var job struct {
		RecentRuns []struct {
			Output string `json:"output"`
		} `json:"recent_runs"`
	}
	getJSON(t, base+"/api/v1/jobs/out07", &job)
	if len(job.RecentRuns) != 25 || len(job.RecentRuns[0].Output) != size || !strings.HasPrefix(job.RecentRuns[0].Output, "run 9") {
		t.Errorf("out07's API: %d runs, the latest output %d bytes (%.20q); want 25 of %d, whole", len(job.RecentRuns), len(job.RecentRuns[0].Output), job.RecentRuns[0].Output, size)
	}
}

// procIO is /proc/PID/io.
func procIO(t *testing.T, pid int) map[string]int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		out[k], _ = strconv.Atoi(v)
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
