package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// timedLine is a run-log record and its time.
type timedLine struct {
	at   time.Time
	line string
	log  int // which of the two logs has it
}

// eventTimeRecords are 30 minutes of a minutely job's runs, each run's
// start in the first log and its end in the second: on time, one slot
// skipped (the skip in the second log, after later runs), one missed, one
// run long enough that the next one overlaps it.
func eventTimeRecords(base time.Time) []timedLine {
	var out []timedLine
	rec := func(log int, at time.Time, format string, args ...any) {
		out = append(out, timedLine{at, fmt.Sprintf(`{"time":%q,"job":"minutely",`, at.Format(time.RFC3339Nano)) + fmt.Sprintf(format, args...) + "}", log})
	}
	for slot := range 30 {
		at := base.Add(time.Duration(slot) * time.Minute)
		switch slot {
		case 11:
			continue // missed
		case 7:
			rec(1, at.Add(3*time.Second), `"event":"skip","host":"web1","pid":%d,"reason":"locked"`, 9000+slot)
			continue
		}
		dur := 10 * time.Second
		if slot == 15 {
			dur = 70 * time.Second // the 16th slot's run overlaps it
		}
		pid := 1000 + slot
		rec(0, at.Add(2*time.Second), `"event":"start","host":"web1","pid":%d`, pid)
		rec(1, at.Add(2*time.Second+dur), `"event":"end","host":"web1","pid":%d,"status":"success","exit_code":0`, pid)
	}
	slices.SortStableFunc(out, func(a, b timedLine) int { return a.at.Compare(b.at) })
	return out
}

func writeLines(t *testing.T, path string, lines []timedLine) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l.line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// The same records through the binary, from one time-ordered run log and
// from two (a run's start in one, its end in the other, the second log
// written in the first seconds after jobwatch started, within its start-up
// hold): every jobwatch_job_* series is the same.
func TestEventTimeTwoRunLogs(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	// Yesterday's half hour, and a schedule of just those 30 minutes: the
	// minutes since are no slots, so the two runs count the same however
	// long each takes.
	base := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour)
	records := eventTimeRecords(base)
	job := fmt.Sprintf(`  - name: minutely
    schedule: "0-29 %d %d %d *"
    timezone: UTC
    grace: 20s
    timeout: 10m
`, base.Hour(), base.Day(), int(base.Month()))
	run := func(t *testing.T, logs int, write func(dir string)) map[string]float64 {
		dir := t.TempDir()
		cfg := "jobs:\n" + job + "sources:\n"
		for i := range logs {
			cfg += fmt.Sprintf("  - name: log%d\n    type: runlog\n    format: json\n    path: %s\n", i, filepath.Join(dir, fmt.Sprintf("runs%d.log", i)))
		}
		if err := os.WriteFile(filepath.Join(dir, "jobwatch.yml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		// The default start-up hold: the second log is written within it.
		in := startJobwatchArgs(t, bin, filepath.Join(dir, "jobwatch.yml"), filepath.Join(dir, "state"), freePort(t), "--sources.startup-hold=10s")
		write(dir)
		// 28 runs (one slot missed, one skipped), once every source has read past them.
		got := in.waitFor(60*time.Second, map[string]float64{`jobwatch_job_runs_total{job_name="minutely",result="success"}`: 28, `jobwatch_job_running{job_name="minutely"}`: 0})
		in.waitFor(30*time.Second, map[string]float64{`jobwatch_job_missed_runs_total{job_name="minutely"}`: got[`jobwatch_job_missed_runs_total{job_name="minutely"}`]})
		samples, _ := in.scrape()
		out := map[string]float64{}
		for k, v := range samples {
			if strings.HasPrefix(k, "jobwatch_job_") && !strings.Contains(k, "seconds_since") && !strings.Contains(k, "decisions_behind") && !strings.Contains(k, "stale{") {
				out[k] = v
			}
		}
		return out
	}
	var first, second []timedLine
	for _, r := range records {
		if r.log == 0 {
			first = append(first, r)
		} else {
			second = append(second, r)
		}
	}
	// The two jobwatch processes run side by side.
	var one, two map[string]float64
	t.Run("logs", func(t *testing.T) {
		t.Run("one", func(t *testing.T) {
			t.Parallel()
			one = run(t, 1, func(dir string) { writeLines(t, filepath.Join(dir, "runs0.log"), records) })
		})
		t.Run("two", func(t *testing.T) {
			t.Parallel()
			two = run(t, 2, func(dir string) {
				writeLines(t, filepath.Join(dir, "runs0.log"), first)
				// The ends and the skip come in three parts over the first seconds.
				for part := range 3 {
					n := len(second) * (part + 1) / 3
					writeLines(t, filepath.Join(dir, "runs1.log"), second[len(second)*part/3:n])
					time.Sleep(time.Second) // pacing the writes, not waiting for jobwatch
				}
			})
		})
	})
	if t.Failed() {
		return
	}
	for _, want := range []struct {
		key string
		v   float64
	}{
		{`jobwatch_job_missed_runs_total{job_name="minutely"}`, 1},
		{`jobwatch_job_overlaps_total{job_name="minutely"}`, 1},
		{`jobwatch_job_skips_total{job_name="minutely",reason="locked"}`, 1},
		{`jobwatch_job_duration_seconds_count{job_name="minutely"}`, 28},
	} {
		if one[want.key] != want.v {
			t.Errorf("one log: %s = %v, want %v", want.key, one[want.key], want.v)
		}
	}
	var diffs []string
	for k, v := range one {
		if two[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: one log %v, two logs %v", k, v, two[k]))
		}
	}
	for k, v := range two {
		if _, ok := one[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: only with two logs (%v)", k, v))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Fatalf("two run logs give other series than one time-ordered log:\n%s", strings.Join(diffs, "\n"))
	}
}

// The same at scale through the binary, with a kill: 25 hosts running a
// minutely job for a week (504,000 records) in one run log, a sparse second
// log with some of the runs' ends and the skips, jobwatch killed with
// SIGKILL in the middle of the catch-up and started again: every
// jobwatch_job_* series is the one time-ordered log's.
func TestEventTimeScaleKill(t *testing.T) {
	if testing.Short() {
		t.Skip("504,000 records through the binary, twice")
	}
	const hosts, days = 25, 7
	bin := buildBinary(t)
	// A schedule of just that week, nine days ago: the minutes since are
	// no slots, so both runs count the same.
	base := time.Now().UTC().Add(-9 * 24 * time.Hour).Truncate(24 * time.Hour)
	job := "  - name: fleet\n    timezone: UTC\n    grace: 20s\n    timeout: 5m\n    on_calendar:\n"
	for d := range days {
		job += fmt.Sprintf("      - \"%s *:*:00\"\n", base.AddDate(0, 0, d).Format("2006-01-02"))
	}
	var all []timedLine
	rec := func(log int, at time.Time, format string, args ...any) {
		all = append(all, timedLine{at, fmt.Sprintf(`{"time":%q,"job":"fleet",`, at.Format(time.RFC3339Nano)) + fmt.Sprintf(format, args...) + "}", log})
	}
	for s := range days * 24 * 60 {
		at := base.Add(time.Duration(s) * time.Minute)
		for h := range hosts {
			host, pid, n := fmt.Sprintf("web%02d", h), 100+s%20000, s*hosts+h
			switch {
			case n%499 == 0:
				continue // this host missed the slot
			case n%211 == 0:
				rec(1, at.Add(time.Second), `"event":"skip","host":%q,"pid":%d,"reason":"locked"`, host, pid)
				continue
			}
			start := at.Add(time.Duration(n*7919%10_000) * time.Millisecond)
			rec(0, start, `"event":"start","host":%q,"pid":%d`, host, pid)
			log := 0
			if n%97 == 0 {
				log = 1 // its start is in the other log
			}
			rec(log, start.Add(time.Duration(1+n%30)*time.Second), `"event":"end","host":%q,"pid":%d,"status":"success","exit_code":0`, host, pid)
		}
	}
	slices.SortStableFunc(all, func(a, b timedLine) int { return a.at.Compare(b.at) })
	var logs [2][]timedLine
	for _, r := range all {
		logs[r.log] = append(logs[r.log], r)
	}

	run := func(n int, kill bool) map[string]float64 {
		dir := t.TempDir()
		cfg := "jobs:\n" + job + "sources:\n"
		for i := range n {
			path := filepath.Join(dir, fmt.Sprintf("runs%d.log", i))
			cfg += fmt.Sprintf("  - name: log%d\n    type: runlog\n    format: json\n    path: %s\n", i, path)
			if n == 1 {
				writeLines(t, path, all)
			} else {
				writeLines(t, path, logs[i])
			}
		}
		cfgPath := filepath.Join(dir, "jobwatch.yml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		state, addr := filepath.Join(dir, "state"), freePort(t)
		in := startJobwatch(t, bin, cfgPath, state, addr)
		if kill {
			// Killed once a save has shown part of the backlog.
			got := in.waitUntil(time.Minute, "a save during the catch-up", func(m map[string]float64) bool { return m[`jobwatch_source_records_total{source="log0"}`] > 0 })
			in.kill(syscall.SIGKILL)
			t.Logf("SIGKILL after %v of %d records of log0 were shown", got[`jobwatch_source_records_total{source="log0"}`], len(logs[0]))
			in = startJobwatch(t, bin, cfgPath, state, addr)
		}
		records := float64(len(all))
		in.waitUntil(3*time.Minute, "every record read and decided", func(m map[string]float64) bool {
			var read float64
			for i := range n {
				read += m[fmt.Sprintf(`jobwatch_source_records_total{source="log%d"}`, i)]
			}
			behind, ok := in.jobBehind("fleet")
			return read == records && ok && behind < 5 && m[`jobwatch_job_running{job_name="fleet"}`] == 0
		})
		samples, _ := in.scrape()
		out := map[string]float64{}
		for k, v := range samples {
			if strings.HasPrefix(k, "jobwatch_job_") && !strings.Contains(k, "seconds_since") && !strings.Contains(k, "decisions_behind") && !strings.Contains(k, "stale{") {
				out[k] = v
			}
		}
		return out
	}
	one := run(1, false)
	two := run(2, true)
	// A host-scope slot is missed when no host ran it: none is here.
	if one[`jobwatch_job_runs_total{job_name="fleet",result="success"}`] < 240_000 || one[`jobwatch_job_skips_total{job_name="fleet",reason="locked"}`] == 0 {
		t.Errorf("the runs are not what the records are for: %v", one)
	}
	var diffs []string
	for k, v := range one {
		if two[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: one log %v, two logs and a kill %v", k, v, two[k]))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Fatalf("two run logs and a SIGKILL give other series than one time-ordered log:\n%s", strings.Join(diffs, "\n"))
	}
}
