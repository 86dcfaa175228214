package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// TestKillBetweenReadAndVerdict writes live records (stamped when they are
// written, as applications write them) into a run log whose late window is
// ten minutes, so that every record read is between its read and its
// verdict when jobwatch is killed with SIGKILL, three times at random
// moments. The facts (runs by result, durations, runs in progress) are
// shown at once, no counter a scrape showed goes back across a kill, and
// in the end every run is counted once without waiting for the watermark;
// restarted with a short window, the verdicts then taken change none of
// them and count no overlap.
func TestKillBetweenReadAndVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test with live records: not in -short")
	}
	const jobs, runs, perWrite, lag = 10, 3000, 20, 5
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	cfgPath := filepath.Join(dir, "jobwatch.yml")
	config := func(window string) {
		var cfg strings.Builder
		cfg.WriteString("jobs:\n")
		for i := range jobs {
			fmt.Fprintf(&cfg, "  - name: live%02d\n    every: 1h\n    timeout: 1w\n", i)
		}
		fmt.Fprintf(&cfg, "sources:\n  - name: runs\n    type: runlog\n    path: %s\n    format: json\n    late_window: %s\n", logPath, window)
		testproc.WriteFile(t, cfgPath, cfg.String())
	}
	config("10m")
	stateDir := filepath.Join(dir, "state")
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))

	// A run's end is written lag runs after its start (so a kill finds
	// runs in progress), each job's runs one at a time (lag < jobs).
	want, lastCode := map[string][2]int{}, map[string]int{}
	var lines []string
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(n int) {
		now := time.Now()
		if n < runs {
			lines = append(lines, rec(now, fmt.Sprintf("live%02d", n%jobs), "start", 200000+n, ""))
		}
		if e := n - lag; e >= 0 {
			job := fmt.Sprintf("live%02d", e%jobs)
			c := want[job]
			status, code := "success", 0
			if e%7 == 3 {
				status, code = "failure", 2
				c[1]++
			} else {
				c[0]++
			}
			want[job], lastCode[job] = c, code
			lines = append(lines, rec(now, job, "end", 200000+e, fmt.Sprintf(`"status":%q,"exit_code":%d,"duration_seconds":0.01`, status, code)))
		}
		if len(lines) >= perWrite || n == runs+lag-1 {
			if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
				t.Fatal(err)
			}
			lines = lines[:0]
			time.Sleep(15 * time.Millisecond) // paces the writes: a log written while it is read
		}
	}

	in := startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
	kills := []int{}
	for range 3 {
		kills = append(kills, rnd.IntN(runs))
	}
	slices.Sort(kills)
	restart := func() {
		before, _ := in.scrape()
		in.kill(syscall.SIGKILL)
		time.Sleep(time.Duration(rnd.IntN(200)) * time.Millisecond) // down for a random moment while records come
		in = startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
		after, _ := in.scrape()
		for k, v := range before {
			if strings.HasPrefix(k, "jobwatch_job_") && strings.Contains(k, "_total") {
				if a, ok := after[k]; ok && a < v {
					t.Errorf("%s went back across SIGKILL: %v before, %v after", k, v, a)
				}
			}
		}
	}
	for n := range runs + lag {
		write(n)
		for len(kills) > 0 && kills[0] == n {
			kills = kills[1:]
			restart()
		}
	}

	final := map[string]float64{}
	for job, c := range want {
		final[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="success"}`, job)] = float64(c[0])
		final[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="failure"}`, job)] = float64(c[1])
		final[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="lost"}`, job)] = noSeries
		final[fmt.Sprintf(`jobwatch_job_duration_seconds_count{job_name=%q}`, job)] = float64(c[0] + c[1])
		final[fmt.Sprintf(`jobwatch_job_running{job_name=%q}`, job)] = 0
		final[fmt.Sprintf(`jobwatch_job_last_exit_code{job_name=%q}`, job)] = float64(lastCode[job])
	}
	// Facts, before any verdict: the watermark is ten minutes behind.
	in.waitFor(30*time.Second, final)
	for job := range want {
		if b, _ := in.jobBehind(job); b < 300 {
			t.Fatalf("%s: decisions %v s behind: the records were decided, not shown as facts", job, b)
		}
	}

	// The verdicts: the held records are decided after a restart with a
	// short window, and change none of the facts.
	in.kill(syscall.SIGKILL)
	config("1s")
	in = startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
	waitDecided(t, in, want)
	for job := range want {
		final[fmt.Sprintf(`jobwatch_job_overlaps_total{job_name=%q}`, job)] = 0
	}
	got, _ := in.scrape()
	for k, v := range final {
		if g, ok := got[k]; v == noSeries && ok {
			t.Errorf("after the verdicts: %s = %v, want no series", k, g)
		} else if v != noSeries && got[k] != v {
			t.Errorf("after the verdicts: %s = %v, want %v", k, got[k], v)
		}
	}
}

// waitDecided waits until every job's decisions are within a few
// seconds of now.
func waitDecided(t *testing.T, in *instance, jobs map[string][2]int) {
	t.Helper()
	testproc.WaitUntil(t, minWait, "the jobs' verdicts decided", func() bool {
		for job := range jobs {
			if b, ok := in.jobBehind(job); !ok || b > 5 {
				return false
			}
		}
		return true
	})
}

// jobBehind is how far behind now the job's verdicts are, as the JSON API
// says (decisions_behind_seconds: /metrics has the figure per source);
// ok is false when the API did not answer with the job.
func (in *instance) jobBehind(job string) (float64, bool) {
	resp, err := http.Get("http://" + in.addr + "/api/v1/jobs/" + url.PathEscape(job))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var j struct {
		Behind *float64 `json:"decisions_behind_seconds"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&j) != nil || j.Behind == nil {
		return 0, false
	}
	return *j.Behind, true
}
