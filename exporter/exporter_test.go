package exporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
)

const testConfig = `
jobs:
  - name: stats
    every: 1h
sources:
  - name: runs
    type: runlog
    path: runs.log
    format: json
`

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runs(t *testing.T, e *Exporter, job string) [6]uint64 {
	t.Helper()
	jobs, _ := e.Tracker().View()
	for _, j := range jobs {
		if j.Spec.Name == job {
			return j.RunCounts
		}
	}
	t.Fatalf("job %q not watched", job)
	return [6]uint64{}
}

// waitUntil waits for cond, bounded by 30 s: a bound only stops a broken
// program. Host mode's journal source is down on the example host (it
// has no journal), and a source down since the start holds decisions for
// up to model's firstReadGrace, 10 s, after each Configure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testproc.WaitUntil(t, 30*time.Second, what, cond)
}

func TestRunReloadAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, testConfig)
	writeFile(t, filepath.Join(dir, "runs.log"), `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":1,"status":"success"}`+"\n")
	opts := Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state"), SaveInterval: 10 * time.Millisecond}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitUntil(t, "the first record", func() bool { return runs(t, e, "stats")[0] == 1 })

	// A config that does not validate is rejected; the running one stays.
	writeFile(t, cfg, "jobs:\n  - name: stats\n    every: 1h\n    bogus: 1\n")
	if err := e.Reload(); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Reload of a bad config: %v", err)
	}
	if v := testutil.ToFloat64(e.reloadOK); v != 0 {
		t.Fatalf("reload successful = %v after a failed reload", v)
	}
	// One whose source cannot be built is rejected too.
	writeFile(t, cfg, strings.Replace(testConfig, "format: json", "format: regex\n    patterns: [{regex: '(?P<time>x)(?P<job>y)', event: start, timeout: 1}]", 1))
	if err := e.Reload(); err == nil {
		t.Fatal("Reload accepted a pattern with an unknown key")
	}
	// A good one is taken: the old job keeps its state, the new one starts.
	writeFile(t, cfg, strings.Replace(testConfig, "sources:", "  - name: extra\n    every: 5m\nsources:", 1))
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(e.reloadOK); v != 1 {
		t.Fatalf("reload successful = %v", v)
	}
	if got := runs(t, e, "stats"); got[0] != 1 {
		t.Fatalf("stats after reload: %v", got)
	}
	runs(t, e, "extra")
	checkSettled(t, e)
	// The source restarted by the reload goes on from its position.
	f, _ := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-11-30T11:00:00Z","job":"stats","event":"end","host":"a","pid":2,"status":"failure"}` + "\n")
	f.Close()
	waitUntil(t, "the appended record", func() bool { return runs(t, e, "stats")[1] == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := runs(t, e, "stats"); got != [6]uint64{1, 1, 0, 0} {
		t.Fatalf("runs %v: a record was read twice or lost", got)
	}

	// A restart takes the saved state and reads nothing twice: once the
	// record appended after the restart is read, so is all before it.
	e2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- e2.Run(ctx) }()
	f, _ = os.OpenFile(filepath.Join(dir, "runs.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-11-30T12:00:00Z","job":"stats","event":"end","host":"a","pid":3,"status":"success"}` + "\n")
	f.Close()
	waitUntil(t, "the record appended after the restart", func() bool { return runs(t, e2, "stats")[0] == 2 })
	cancel()
	<-done
	if got := runs(t, e2, "stats"); got != [6]uint64{2, 1, 0, 0} {
		t.Fatalf("after restart: runs %v, want the saved 1 and 1 and the new success", got)
	}
}

func TestNewRefusesABadStateFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, testConfig)
	stateDir := filepath.Join(dir, "state")
	os.MkdirAll(stateDir, 0o700)
	writeFile(t, filepath.Join(stateDir, "state.json"), `{"version":99}`)
	_, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: stateDir})
	if err == nil || !strings.Contains(err.Error(), "state.json") || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("New with a state of another version: %v", err)
	}
}

func TestJobSpecs(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, "stale_multiple: 3\nlabels: {team: ops}\nalert_after: {failures: 3}\njobs:\n"+
		"  - name: a\n    every: 10m\n    timeout: 5m\n    grace: 1m\n    scope: cluster\n    labels: {team: payments, owner: alice}\n    alert_after: {skips: 5}\n"+
		"  - name: b\n    every: 1h\n")
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := e.Tracker().View()
	want := []model.JobSpec{
		{Name: "a", Timeout: 5 * time.Minute, Grace: time.Minute, Scope: "cluster", StaleMultiple: 3,
			Labels: map[string]string{"team": "payments", "owner": "alice"}, AlertAfter: model.AlertAfter{Failures: 3, Skips: 5}},
		{Name: "b", Scope: "host", StaleMultiple: 3, Labels: map[string]string{"team": "ops"}, AlertAfter: model.AlertAfter{Failures: 3}},
	}
	for i, j := range jobs {
		spec := *j.Spec // a copy: the view shares the model's
		spec.Schedule = nil
		if !reflect.DeepEqual(spec, want[i]) {
			t.Errorf("spec %d: %+v, want %+v", i, spec, want[i])
		}
	}
}

// Schedule problems are reported together with the rest of the config's.
func TestCheckReportsScheduleAndConfigProblemsAtOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, `
jobs:
  - name: feb30
    schedule: "0 0 30 2 *"
  - name: zone
    on_calendar: ["*-*-* 03:00", "Mo 04:00"]
    timezone: Mars/Base
  - name: zone
    every: 1h
sources:
  - name: s
    type: runlog
    format: json
`)
	_, _, _, err := Check(context.Background(), cfg)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`job "feb30": schedule: "0 0 30 2 *": never fires`,
		`job "zone": timezone: unknown time zone "Mars/Base"`,
		`job "zone": on_calendar[1]: "Mo 04:00"`,
		`job "zone": duplicate job name`,
		`source "s": path is required`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// check-config asks a mysql source about its table: a missing table is an
// error naming the source; a server that cannot be reached is a warning.
func TestCheckAsksTheDatabase(t *testing.T) {
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, fmt.Sprintf(`
jobs:
  - name: stats
    every: 1h
sources:
  - name: billing-db
    type: mysql
    dsn: %q
    table: no_such_table
  - name: offline-db
    type: mysql
    dsn: "jobwatch:secret@tcp(127.0.0.1:1)/app"
`, srv.RootDSN(db)))
	_, _, warnings, err := Check(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), `source "billing-db"`) || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("Check: %v; want an error naming billing-db and its table", err)
	}
	if strings.Contains(err.Error(), `source "billing-db": source`) {
		t.Errorf("source named twice: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `source "offline-db"`) || strings.Contains(warnings[0], "secret") {
		t.Fatalf("warnings %q; want one about offline-db, without its password", warnings)
	}
}

// checkSettled fails unless e's running generation has let its decoded
// jobs go, which the model's JobSpecs hold (generation.settle).
func checkSettled(t *testing.T, e *Exporter) {
	t.Helper()
	e.mu.Lock()
	g := e.running
	e.mu.Unlock()
	if g.cfg.Jobs != nil || g.base.Jobs != nil {
		t.Errorf("the running generation keeps %d jobs of its config and %d of the file's", len(g.cfg.Jobs), len(g.base.Jobs))
	}
}
