package exporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobwatch/jobwatch/model"
)

// hostRoot is a copy of discover's example host (docs/discover.md), to add
// files to, with an empty journal directory of its own: its journal source
// reads that, not the machine's.
func hostRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(root, os.DirFS("../discover/testdata/example")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "var/log/journal"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// schedules are the saved jobs' schedules by name.
func schedules(e *Exporter) map[string]string {
	jobs, _ := e.View()
	out := map[string]string{}
	for _, j := range jobs {
		out[j.Spec.Name] = fmt.Sprint(j.Spec.Schedule)
	}
	return out
}

func savedJob(e *Exporter, name string) *model.JobView {
	jobs, _ := e.View()
	for i := range jobs {
		if jobs[i].Spec.Name == name {
			return &jobs[i]
		}
	}
	return nil
}

// Host mode: a config without jobs watches the example host's six, with
// the schedules discover writes; a cron.d file added is watched without a
// restart, and one removed is not expected any more, while the jobs that
// stay keep what they counted.
func TestHostMode(t *testing.T) {
	dir := t.TempDir()
	root := hostRoot(t)
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, "discovery:\n  enabled: true\n  watch: true\n  root: "+root+"\n")
	runLog := filepath.Join(dir, "runs.log")
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state"),
		SaveInterval: 10 * time.Millisecond, DiscoveryInterval: 20 * time.Millisecond, RunLog: runLog})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()

	want := map[string]string{
		"backup": "30 2 * * *", "db-dump-postgres": "15 3 * * *", "sitemap": "*/5 * * * *",
		"report": "0 1 * * *", "db-dump": "*-*-* 03:15:00", "metrics-push": "*:0/15",
	}
	waitUntil(t, "the host's six jobs saved", func() bool { return len(schedules(e)) == len(want) })
	got := schedules(e)
	for name, s := range want {
		if got[name] != s {
			t.Errorf("job %s: schedule %q, want %q", name, got[name], s)
		}
	}
	if v := testutil.ToFloat64(e.discoveryWatched); v != 6 {
		t.Errorf("watched jobs %v, want 6", v)
	}

	// sitemap runs under jobwatch run: its runs come from the run log.
	writeFile(t, runLog, `{"time":"2026-11-30T10:00:00Z","job":"sitemap","event":"end","host":"a","pid":1,"status":"success"}`+"\n")
	waitUntil(t, "sitemap's run", func() bool { j := savedJob(e, "sitemap"); return j != nil && j.RunCounts[0] == 1 })

	extra := filepath.Join(root, "etc/cron.d/extra")
	writeFile(t, extra, "0 4 * * * root jobwatch run --job extra --timeout 1h -- /usr/local/bin/extra\n")
	waitUntil(t, "the added cron.d job watched", func() bool { return schedules(e)["extra"] == "0 4 * * *" })
	if j := savedJob(e, "sitemap"); j == nil || j.RunCounts[0] != 1 {
		t.Errorf("sitemap after the new job: %+v, want its run kept", j)
	}
	if v := testutil.ToFloat64(e.discoveryWatched); v != 7 {
		t.Errorf("watched jobs %v, want 7", v)
	}

	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the removed job no longer expected", func() bool {
		_, ok := schedules(e)["extra"]
		return !ok && len(schedules(e)) == len(want)
	})
	if j := savedJob(e, "sitemap"); j == nil || j.RunCounts[0] != 1 {
		t.Errorf("sitemap after the job's removal: %+v, want its run kept", j)
	}
}

// check-config in host mode checks the config serve would run: the
// configured job and the host's five others, counted.
func TestCheckHostMode(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	root, err := filepath.Abs("../discover/testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "jobs:\n  - name: backup\n    every: 1d\ndiscovery:\n  enabled: true\n  watch: true\n  root: "+root+"\n")
	c, hostJobs, _, err := Check(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Jobs) != 6 || hostJobs != 5 || c.Jobs[0].Every.D() != 24*time.Hour {
		t.Errorf("%d jobs, %d of the host's, the first %+v; want 6, 5 and the configured backup", len(c.Jobs), hostJobs, c.Jobs[0])
	}
	writeFile(t, cfg, "discovery:\n  enabled: true\n  watch: true\n  root: "+filepath.Join(dir, "nosuch")+"\n")
	if _, _, _, err := Check(context.Background(), cfg); err == nil {
		t.Error("a root that does not exist passed")
	}
}
