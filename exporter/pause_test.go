package exporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The file's maintenance windows apply to every job, besides each job's
// own; a pause is saved, and so shown by scrapes, before Pause returns.
func TestMaintenanceAndPause(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, `
maintenance:
  - {schedule: "0 2 * * 0", duration: 2h}
jobs:
  - name: a
    every: 10m
    maintenance:
      - {on_calendar: "Sat 01:00", duration: 30m, timezone: Europe/Berlin}
  - name: b
    every: 1h
`)
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.store.Close()
	jobs, _ := e.Tracker().View()
	if len(jobs[0].Spec.Maintenance) != 2 || len(jobs[1].Spec.Maintenance) != 1 {
		t.Fatalf("windows: a %d, b %d; want 2 and 1", len(jobs[0].Spec.Maintenance), len(jobs[1].Spec.Maintenance))
	}
	sunday := time.Date(2026, 12, 6, 3, 0, 0, 0, time.Local)
	if w := jobs[1].Spec.Maintenance[0]; !w.Schedule.Prev(sunday).Equal(sunday.Add(-time.Hour)) || w.Duration != 2*time.Hour {
		t.Errorf("b's window opens %v before Sunday 03:00, lasts %v", w.Schedule.Prev(sunday), w.Duration)
	}

	if _, err := e.Pause("a", model.Pause{Reason: "disk swap"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range func() []model.JobView { v, _ := e.Saved().View(); return v }() {
		if got := v.Pauses.Why() == model.UnjudgedPaused; got != (v.Spec.Name == "a") {
			t.Errorf("saved view of %s: paused %v", v.Spec.Name, got)
		}
	}
	if err := e.Resume("a"); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Saved().View(); v[0].Pauses.Why() != "" {
		t.Error("resumed, the saved view still shows a paused")
	}
}
