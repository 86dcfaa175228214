package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// A request still busy at the deadline does not hold the stop: its
// connection is closed.
func TestShutdownServerDeadline(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	clientErr := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + l.Addr().String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-entered
	var logs testproc.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	begin := time.Now()
	shutdownServer(logger, srv, 50*time.Millisecond)
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("shutdown took %v with a 50ms deadline", d)
	}
	if err := <-clientErr; err == nil {
		t.Errorf("the busy request got a response; want its connection closed")
	}
	if !strings.Contains(logs.String(), "still busy after the shutdown deadline") {
		t.Errorf("logs lack the deadline warning:\n%s", logs.String())
	}
}

// A stop logs "stopped" with what the final save holds.
func TestServeLogsStopped(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.log")
	if err := os.WriteFile(runs, []byte(`{"time":"2026-12-01T09:00:00.000Z","job":"stats","event":"start","host":"h","pid":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "jobwatch.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, e2eConfig, runs), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "data")
	var logs testproc.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	exp, err := exporter.New(exporter.Options{ConfigFile: cfg, StateDir: state, Logger: logger, StartupHold: -1})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp.ServedCollectors()...)
	addr := testproc.FreeAddr(t)
	app := kingpin.New("jobwatch", "")
	o := addWebFlags(app.Command("serve", ""))
	if _, err := app.Parse([]string{"serve", "--web.listen-address=" + addr}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- serveUntil(ctx, stop, logger, exp, reg, state, o) }()

	// The record read and saved: scrapes show the state as saved.
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := ""
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		if strings.Contains(body, `jobwatch_source_records_total{source="runs"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record was not saved:\n%s\n%s", body, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not return after the stop:\n%s", logs.String())
	}
	want := `msg=stopped state=` + state + ` jobs_saved=2 sources_saved=1 records_read=1`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, logs.String())
	}
	if i, j := strings.Index(logs.String(), "msg=\"shutting down\""), strings.Index(logs.String(), "msg=stopped"); i < 0 || j < i {
		t.Errorf("want \"shutting down\" then \"stopped\":\n%s", logs.String())
	}
}
