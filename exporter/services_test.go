package exporter

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

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
jobwatch_checkins_rejected_total{reason="bad_exit_code"} 0
jobwatch_checkins_rejected_total{reason="bad_host"} 0
jobwatch_checkins_rejected_total{reason="bad_path"} 0
jobwatch_checkins_rejected_total{reason="bad_pid"} 0
jobwatch_checkins_rejected_total{reason="bad_reason"} 0
jobwatch_checkins_rejected_total{reason="bad_rid"} 0
jobwatch_checkins_rejected_total{reason="body_too_large"} 0
jobwatch_checkins_rejected_total{reason="cross_site"} 0
jobwatch_checkins_rejected_total{reason="method_not_allowed"} 0
jobwatch_checkins_rejected_total{reason="unknown_job"} 2
`), "jobwatch_checkins_rejected_total"); err != nil {
		t.Error(err)
	}
}
