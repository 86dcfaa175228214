package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	run := func(logs int, write func(dir string)) map[string]float64 {
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
	one := run(1, func(dir string) { writeLines(t, filepath.Join(dir, "runs0.log"), records) })
	var first, second []timedLine
	for _, r := range records {
		if r.log == 0 {
			first = append(first, r)
		} else {
			second = append(second, r)
		}
	}
	two := run(2, func(dir string) {
		writeLines(t, filepath.Join(dir, "runs0.log"), first)
		// The ends and the skip come in three parts over the first seconds.
		for part := range 3 {
			n := len(second) * (part + 1) / 3
			writeLines(t, filepath.Join(dir, "runs1.log"), second[len(second)*part/3:n])
			time.Sleep(time.Second) // pacing the writes, not waiting for jobwatch
		}
	})
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
