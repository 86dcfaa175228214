// Package scale writes the many-jobs setup that the scale test
// (cmd/jobwatch's TestScale) and the scale benchmark
// (internal/testsupport/cmd/scalebench) run jobwatch on, and waits for its catch-up.
package scale

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RecordsPerJob is how many records WriteSetup writes for each job.
const RecordsPerJob = 6

// Source is the name of the run-log source of WriteSetup's config.
const Source = "runs"

// JobName is the name of job i.
func JobName(i int) string { return fmt.Sprintf("job_%06d", i) }

// WriteSetup writes dir/jobwatch.yml, n jobs run every hour and a run-log
// source on logPath, and the run log, in which each job has a success, a
// failure, a skip and a run in progress (so every per-job series is
// present), the newest a minute before now.
func WriteSetup(dir, logPath string, n int, now time.Time) error {
	var cfg bytes.Buffer
	cfg.WriteString("jobs:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: %s\n    every: 1h\n    timeout: 2h\n", JobName(i))
	}
	fmt.Fprintf(&cfg, "sources:\n  - name: %s\n    type: runlog\n    path: %s\n    format: json\n", Source, logPath)
	if err := os.WriteFile(filepath.Join(dir, "jobwatch.yml"), cfg.Bytes(), 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ts := func(d time.Duration) string { return now.UTC().Add(-d).Format(time.RFC3339Nano) }
	// In time order, as jobs writing one log leave it: each record of
	// every job, then the next (a log in another order is read late, see
	// docs/schedules.md).
	records := []struct {
		ago    time.Duration
		format string
		pid    int
	}{
		{3 * time.Hour, `"event":"start","host":"web1","pid":%d`, 0},
		{2 * time.Hour, `"event":"end","host":"web1","pid":%d,"status":"success","exit_code":0`, 0},
		{time.Hour + time.Minute, `"event":"start","host":"web1","pid":%d`, 1},
		{time.Hour, `"event":"end","host":"web1","pid":%d,"status":"failure","exit_code":1`, 1},
		{30 * time.Minute, `"event":"skip","host":"web1","pid":%d,"reason":"locked"`, 2},
		{time.Minute, `"event":"start","host":"web1","pid":%d`, 3},
	}
	for _, r := range records {
		for i := range n {
			fmt.Fprintf(w, `{"time":%q,"job":%q,`+r.format+"}\n", ts(r.ago), JobName(i), 4*i+1+r.pid)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AppendSuccess appends to w a run of job on host (start and end, a
// success) at t, with pid.
func AppendSuccess(w *bytes.Buffer, job, host string, pid int, t time.Time) {
	ts := t.UTC().Format(time.RFC3339Nano)
	fmt.Fprintf(w, `{"time":%q,"job":%q,"event":"start","host":%q,"pid":%d}`+"\n", ts, job, host, pid)
	fmt.Fprintf(w, `{"time":%q,"job":%q,"event":"end","host":%q,"pid":%d,"status":"success","exit_code":0}`+"\n", ts, job, host, pid)
}

// Client scrapes without compression, as the floor is read.
var Client = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// Scrape returns the body of addr's /metrics in the format accept asks for.
func Scrape(addr, accept string) ([]byte, error) {
	req, err := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	rsp, err := Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", addr, rsp.Status)
	}
	return io.ReadAll(rsp.Body)
}

// StatusKB is the value in kB of key (VmRSS, VmHWM) in /proc/PID/status.
func StatusKB(pid int, key string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// WaitRecords waits until jobwatch on addr shows (so has saved) want
// records of Source, asking for that family only.
func WaitRecords(addr string, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var got uint64
	for time.Now().Before(deadline) {
		rsp, err := Client.Get("http://" + addr + "/metrics?name[]=jobwatch_source_records_total")
		if err == nil {
			b, _ := io.ReadAll(rsp.Body)
			rsp.Body.Close()
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(line, `jobwatch_source_records_total{source="`+Source+`"} `); ok {
					f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
					got = uint64(f)
				}
			}
			if got >= want {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("timed out waiting for the catch-up: " + strconv.FormatUint(got, 10) + " records shown, want " + strconv.FormatUint(want, 10))
}
