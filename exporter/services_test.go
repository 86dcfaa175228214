package exporter

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// jobwatch serve with discovery on the example host of docs/discover.md:
// its findings and unwatched jobs are exported, and they go away with
// discovery turned off by a reload.
func TestDiscoveryMetrics(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs("../discover/testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1d\ndiscovery:\n  enabled: true\n  interval: 1h\n  root: "+root+"\n")
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collectors()...)
	runUntilEnd(t, e)
	waitUntil(t, "a discovery", func() bool { return testutil.ToFloat64(e.discoveryLast) > 0 })
	if got := testutil.ToFloat64(e.discoveryFindings.WithLabelValues("duplicate_command", "warning")); got != 1 {
		t.Errorf("duplicate_command findings %v, want 1 (the example host's db dump)", got)
	}
	if got := testutil.ToFloat64(e.discoveryUnwatched); got < 5 {
		t.Errorf("unwatched jobs %v: the config watches one of the host's six", got)
	}
	n, err := testutil.GatherAndCount(reg, "jobwatch_discovery_findings", "jobwatch_discovery_unwatched_jobs")
	if err != nil || n < 20 {
		t.Errorf("%d discovery series exported (%v)", n, err)
	}

	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1d\n")
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(reg, "jobwatch_discovery_findings"); n != 0 {
		t.Errorf("%d discovery series after discovery was turned off", n)
	}
}

// Check-ins through the exporter: refused while not configured, accepted
// once a reload turns them on, applied and shown.
func TestCheckinsThroughTheExporter(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1d\n")
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, e)
	mux := http.NewServeMux()
	for _, r := range e.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	ping := func(path string) int {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("output"))
		mux.ServeHTTP(w, req)
		return w.Code
	}
	if code := ping("/ping/backup"); code != http.StatusNotFound {
		t.Errorf("check-ins not configured: %d", code)
	}
	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1d\ncheckins:\n  enabled: true\n")
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if code := ping("/ping/backup/start"); code != http.StatusOK {
		t.Fatalf("start: %d", code)
	}
	if code := ping("/ping/backup/0"); code != http.StatusOK {
		t.Fatalf("end: %d", code)
	}
	if code := ping("/ping/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown job: %d", code)
	}
	waitUntil(t, "the check-ins applied and saved", func() bool {
		jobs, _ := e.View()
		if len(jobs) != 1 || jobs[0].RunCounts[0] != 1 || len(jobs[0].Recent) != 1 {
			return false
		}
		out, err := e.Output(jobs[0].Recent[0].Fields().OutputRef)
		return err == nil && out == "output"
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Collectors()...)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP jobwatch_checkins_rejected_total Check-ins refused, by reason (docs/checkins.md).
# TYPE jobwatch_checkins_rejected_total counter
jobwatch_checkins_rejected_total{reason="bad_checkin"} 0
jobwatch_checkins_rejected_total{reason="bad_exit_code"} 0
jobwatch_checkins_rejected_total{reason="bad_host"} 0
jobwatch_checkins_rejected_total{reason="bad_path"} 0
jobwatch_checkins_rejected_total{reason="bad_pid"} 0
jobwatch_checkins_rejected_total{reason="bad_reason"} 0
jobwatch_checkins_rejected_total{reason="bad_rid"} 0
jobwatch_checkins_rejected_total{reason="body_too_large"} 0
jobwatch_checkins_rejected_total{reason="create_refused"} 0
jobwatch_checkins_rejected_total{reason="cross_site"} 0
jobwatch_checkins_rejected_total{reason="method_not_allowed"} 0
jobwatch_checkins_rejected_total{reason="unknown_job"} 2
jobwatch_checkins_rejected_total{reason="wrong_key"} 0
`), "jobwatch_checkins_rejected_total"); err != nil {
		t.Error(err)
	}
}

// Check-ins after this host's clock stepped back 120 s: the receiver
// stamps them by the model's clock, so they are the host's present, not
// late records, and a success moves the last success on.
func TestCheckinsAfterClockStepBack(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1m\ncheckins:\n  enabled: true\n")
	var offset atomic.Int64
	wall := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state"), Now: wall, Mono: model.ProcessMono})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, e)
	mux := http.NewServeMux()
	for _, r := range e.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	ping := func(path string) {
		t.Helper()
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, w.Code)
		}
	}
	var last time.Time
	for i := range 2 {
		if i == 1 {
			offset.Store(int64(-120 * time.Second))
		}
		ping("/ping/backup/start")
		ping("/ping/backup/0")
		waitUntil(t, "the check-ins applied", func() bool {
			jobs, _ := e.View()
			return jobs[0].RunCounts[0] == uint64(i+1)
		})
		jobs, srcs := e.View()
		if !jobs[0].LastSuccess.After(last) {
			t.Fatalf("check-in %d: last success %s, not after %s", i, jobs[0].LastSuccess, last)
		}
		last = jobs[0].LastSuccess.Time()
		for _, s := range srcs {
			if s.LateRecords != 0 {
				t.Fatalf("check-in %d: source %s has %d late records", i, s.Name, s.LateRecords)
			}
		}
	}
	if steps := e.Tracker().ClockSteps(); steps != [2]uint64{0, 1} {
		t.Errorf("steps forward, backward: %v, want [0 1]", steps)
	}
}
