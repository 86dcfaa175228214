package exporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A job Healthchecks' ?create=1 creates is watched at once, its first
// check-in applied, and is watched again after a restart: it is kept in
// the state directory.
func TestCreatedJobAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, `jobs:
  - name: backup
    every: 1d
checkins:
  enabled: true
  keys:
    healthchecks: fqOOd6-F4MMNuCEnzTU01w
  create:
    match: ^tmp-
    every: 1h
    grace: 10m
    max: 1
`)
	opts := Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state")}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	mux := http.NewServeMux()
	for _, r := range e.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	ping := func(path string) (int, string) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader("")))
		return w.Code, w.Body.String()
	}
	if code, body := ping("/ping/fqOOd6-F4MMNuCEnzTU01w/tmp-report?create=1"); code != http.StatusCreated || body != "Created" {
		t.Fatalf("create: %d %q", code, body)
	}
	if code, _ := ping("/ping/fqOOd6-F4MMNuCEnzTU01w/tmp-other?create=1"); code != http.StatusForbidden {
		t.Errorf("past create.max: %d", code)
	}
	if code, _ := ping("/ping/fqOOd6-F4MMNuCEnzTU01w/report?create=1"); code != http.StatusNotFound {
		t.Errorf("outside create.match: %d", code)
	}
	for _, s := range e.services {
		if c := s.counters["checkins_rejected_total"]; c != nil {
			if got := testutil.ToFloat64(c.WithLabelValues("create_refused")); got != 2 {
				t.Errorf("create_refused %v, want 2", got)
			}
		}
	}
	watched := func(e *Exporter) bool {
		jobs, _ := e.View()
		for _, j := range jobs {
			if j.Spec.Name == "tmp-report" && j.RunCounts[0] == 1 {
				return true
			}
		}
		return false
	}
	waitUntil(t, "the created job's first run applied and saved", func() bool { return watched(e) })
	if p := e.Proposals(); len(p) != 1 || !p[0].Created || p[0].Entry != "- name: tmp-report\n  every: 1h\n  grace: 10m\n  aliases: [tmp-report]\n" {
		t.Errorf("proposals %+v", p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	e2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, e2)
	if !watched(e2) {
		jobs, _ := e2.View()
		t.Errorf("after a restart the created job is not watched with its run: %+v", jobs)
	}
	mux = http.NewServeMux()
	for _, r := range e2.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	if code, body := ping("/ping/fqOOd6-F4MMNuCEnzTU01w/tmp-report/start"); code != http.StatusOK || body != "OK" {
		t.Errorf("a check-in of the created job after the restart: %d %q", code, body)
	}
}
