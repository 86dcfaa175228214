// Command genlog writes the example run log that the bundled jobwatch.yml
// watches, with times relative to now, so that jobwatch shows one job of
// each kind however long after a checkout it runs:
//
//   - stats, hourly, is healthy: its last run succeeded ten minutes ago
//     (an earlier one timed out);
//   - backup, daily at 02:30 UTC, is failing: its last run exited 2, the
//     one a day before succeeded, so it is not yet stale;
//   - cleanup, hourly, is stale: its last success was five hours ago, when
//     two hosts ran it at once (an overlap), and its run after that was
//     skipped;
//   - reindex, daily, is running: it started five minutes ago.
//
// One line is not a record, to show jobwatch_source_parse_errors_total.
//
// It also resets the example's state (jobwatch's state files in data/,
// -state): kept from an earlier run, it would count the new log's runs
// again. It refuses while a jobwatch holds that state.
//
// Usage, from the repository's root: go run ./examples/genlog
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(genlog(os.Args[1:], os.Stdout, os.Stderr)) }

func genlog(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("genlog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "examples/runs.log", "file to write")
	stateDir := fs.String("state", "data", "the example's state directory, reset with the log (\"\": keep it)")
	nowFlag := fs.String("now", "", "write the log as of this instant (RFC 3339; default: now)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	now := time.Now()
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			fmt.Fprintln(stderr, "genlog: -now:", err)
			return 2
		}
		now = t
	}
	// A state kept from an earlier run of the example holds that log's read
	// position and runs: against a new log it would count the runs again.
	var unlock func()
	if *stateDir != "" {
		var err error
		if unlock, err = lockState(*stateDir); err != nil {
			fmt.Fprintln(stderr, "genlog:", err)
			return 1
		}
		defer unlock()
	}
	f, err := os.Create(*out)
	if err == nil {
		err = write(f, now)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && *stateDir != "" {
		var removed []string
		removed, err = resetState(*stateDir)
		if err == nil && len(removed) > 0 {
			fmt.Fprintf(stdout, "genlog: removed the example's state in %s (%s), so that jobwatch reads the new %s from its start and counts its runs once\n",
				filepath.Clean(*stateDir)+"/", strings.Join(removed, ", "), *out)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "genlog:", err)
		return 1
	}
	return 0
}

// stateFiles are the files jobwatch keeps in its state directory (package
// state); resetState removes these and no others.
var stateFiles = []string{"state.snap", "state.log", "state.json"}

// lockState takes the state directory's lock, as jobwatch does, so that the
// state of a jobwatch still running is never removed under it. A missing
// directory needs no lock.
func lockState(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the example's state: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the example's state in %s is in use by a running jobwatch: stop it first (Ctrl-C), then run genlog again", dir)
		}
		return nil, fmt.Errorf("the example's state: %w", err)
	}
	return func() { f.Close() }, nil
}

// resetState removes jobwatch's state files from dir, a save's leftovers
// included, and dir itself once empty; it returns the names removed.
func resetState(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the example's state: %w", err)
	}
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isStateFile(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return removed, fmt.Errorf("resetting the example's state: %w", err)
		}
		if e.Name() != "lock" {
			removed = append(removed, e.Name())
		}
	}
	_ = os.Remove(dir) // left when it holds anything else
	return removed, nil
}

func isStateFile(name string) bool {
	if name == "lock" {
		return true
	}
	for _, f := range stateFiles {
		if name == f || strings.HasPrefix(name, f+".tmp") {
			return true
		}
	}
	return false
}

// record is one line of the run log, in the order jobwatch run writes it.
type record struct {
	Time     string   `json:"time"`
	Job      string   `json:"job"`
	Event    string   `json:"event"`
	Host     string   `json:"host"`
	PID      int      `json:"pid"`
	RunID    string   `json:"run_id,omitempty"`
	Status   string   `json:"status,omitempty"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Duration *float64 `json:"duration_seconds,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Holder   int      `json:"holder_pid,omitempty"`
}

type run struct {
	job, host, runID, status string
	pid, exit                int
	start                    time.Time
	dur                      time.Duration
}

func (r run) records() []record {
	code, secs := r.exit, r.dur.Seconds()
	return []record{
		{Time: stamp(r.start), Job: r.job, Event: "start", Host: r.host, PID: r.pid, RunID: r.runID},
		{Time: stamp(r.start.Add(r.dur)), Job: r.job, Event: "end", Host: r.host, PID: r.pid, RunID: r.runID, Status: r.status, ExitCode: &code, Duration: &secs},
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// backupRun is the last 02:30 UTC slot at least a second before now and
// how long its run took: 667 s, or less when the slot is more recent, so
// that the run has ended by now and no slot since has been missed.
func backupRun(now time.Time) (time.Time, time.Duration) {
	u := now.UTC()
	slot := time.Date(u.Year(), u.Month(), u.Day(), 2, 30, 0, 0, time.UTC)
	for now.Sub(slot) < time.Second {
		slot = slot.AddDate(0, 0, -1)
	}
	return slot, min(667309*time.Millisecond, now.Sub(slot)/2)
}

func write(w io.Writer, now time.Time) error {
	now = now.Truncate(time.Second)
	hour := func(h float64) time.Time { return now.Add(-time.Duration(h * float64(time.Hour))) }
	slot, backupDur := backupRun(now)

	var lines []any
	add := func(rs ...record) {
		for _, r := range rs {
			lines = append(lines, r)
		}
	}
	// cleanup (scope: cluster): two hosts at once five hours ago, an
	// overlap, then a skipped tick.
	add(
		record{Time: stamp(hour(5)), Job: "cleanup", Event: "start", Host: "web1", PID: 7001},
		record{Time: stamp(hour(5).Add(130 * time.Millisecond)), Job: "cleanup", Event: "start", Host: "web2", PID: 3310},
	)
	lines = append(lines, "this line is not a record: jobwatch counts it in jobwatch_source_parse_errors_total")
	zero := 0
	add(
		record{Time: stamp(hour(5).Add(2 * time.Second)), Job: "cleanup", Event: "end", Host: "web1", PID: 7001, Status: "success", ExitCode: &zero},
		record{Time: stamp(hour(5).Add(2400 * time.Millisecond)), Job: "cleanup", Event: "end", Host: "web2", PID: 3310, Status: "success", ExitCode: &zero},
		record{Time: stamp(hour(4)), Job: "cleanup", Event: "skip", Host: "web1", PID: 7102, Reason: "locked", Holder: 7090},
	)
	// stats: hourly; one run timed out, the last one succeeded ten
	// minutes ago.
	add(run{job: "stats", host: "web1", pid: 4242, runID: "a1f3c9e2d4b5a6c7", status: "success", start: hour(3).Add(-10 * time.Minute), dur: 40488 * time.Millisecond}.records()...)
	add(run{job: "stats", host: "web1", pid: 5120, runID: "b2e4d1f0c3a5b7d9", status: "timeout", exit: 124, start: hour(2).Add(-10 * time.Minute), dur: 25 * time.Minute}.records()...)
	add(run{job: "stats", host: "web1", pid: 6230, runID: "c3d5e7f9a1b2c4d6", status: "success", start: hour(1).Add(-10 * time.Minute), dur: 38885 * time.Millisecond}.records()...)
	// backup: succeeded a day before its last slot, failed at that slot.
	add(run{job: "backup", host: "db1", pid: 790, runID: "e5f7a9b1c3d5e7f9", status: "success", start: slot.AddDate(0, 0, -1), dur: 641 * time.Second}.records()...)
	add(run{job: "backup", host: "db1", pid: 812, runID: "d4c6e8a0b2d4f6a8", status: "failure", exit: 2, start: slot, dur: backupDur}.records()...)
	add(run{job: "stats", host: "web1", pid: 6301, runID: "f6a8c0e2b4d6f8a0", status: "success", start: now.Add(-10 * time.Minute), dur: 39120 * time.Millisecond}.records()...)
	// reindex: started five minutes ago, still running.
	add(record{Time: stamp(now.Add(-5 * time.Minute)), Job: "reindex", Event: "start", Host: "web1", PID: 9999})

	// Records in time order, as a log is written.
	sortByTime(lines)
	for _, l := range lines {
		var b []byte
		switch v := l.(type) {
		case string:
			b = []byte(v)
		case record:
			var err error
			if b, err = json.Marshal(v); err != nil {
				return err
			}
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// sortByTime orders records by time, stably; a line that is not a record
// keeps its place after the record before it.
func sortByTime(lines []any) {
	key := make([]string, len(lines))
	last := ""
	for i, l := range lines {
		if r, ok := l.(record); ok {
			last = r.Time
		}
		key[i] = last
	}
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && key[j] < key[j-1]; j-- {
			key[j], key[j-1] = key[j-1], key[j]
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
}
