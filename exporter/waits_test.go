package exporter

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// check-config warns of each job whose runs come closer together than
// twice the wait of a source of runs, naming both: a run log's wait is its
// late window, a mysql source's its poll interval and the database's
// margin, or its poll interval and late_window when that is set.
func TestCheckWarnsOfPeriodsShorterThanTwiceAWait(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, `
jobs:
  - name: fast
    every: 10s
  - name: minutely
    schedule: "* * * * *"
  - name: nightly
    schedule: "0 3 * * *"
sources:
  - name: log
    type: runlog
    path: runs.log
    format: json
  - name: db
    type: mysql
    dsn: "jobwatch:secret@tcp(127.0.0.1:1)/app"
    poll_interval: 5s
  - name: fixed
    type: mysql
    dsn: "jobwatch:secret@tcp(127.0.0.1:1)/app"
    poll_interval: 5s
    late_window: 1m
`)
	_, _, warnings, err := Check(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		if strings.Contains(w, "less than twice") {
			got = append(got, w[:strings.Index(w, ":")]+" / "+w[strings.Index(w, "source "):strings.Index(w, "'s watermark")])
		}
	}
	want := []string{
		`job "fast" / source "db"`,
		`job "fast" / source "fixed"`,
		`job "minutely" / source "fixed"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("period warnings:\n  %s\nwant\n  %s\nall warnings: %q", strings.Join(got, "\n  "), strings.Join(want, "\n  "), warnings)
	}
	for _, w := range warnings {
		if strings.Contains(w, `job "fast"`) && strings.Contains(w, `source "db"`) && !strings.Contains(w, "runs 10s apart, less than twice the 6s") {
			t.Errorf("warning %q does not say the period and the wait", w)
		}
	}
}
