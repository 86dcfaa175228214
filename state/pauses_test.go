package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// A job's pause, the spans it left and its unjudged runs are saved and
// loaded again, in a snapshot and in a log entry.
func TestPausesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := newTestModel(t, dir)
	m.save(t) // the snapshot
	if _, err := m.tr.Pause("backup", model.Pause{Until: t0.Add(3 * time.Hour), Reason: "disk swap"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.tr.Pause("stats", model.Pause{UntilHealthy: true}); err != nil {
		t.Fatal(err)
	}
	m.save(t) // a log entry
	want := views(m.tr)
	m.store.Close()
	m2 := newTestModel(t, dir)
	if got := views(m2.tr); got != want {
		t.Fatalf("loaded\n%s\nwant\n%s", got, want)
	}
	jobs, _ := m2.tr.View()
	for _, j := range jobs {
		if j.Pauses.Why() != model.UnjudgedPaused {
			t.Errorf("%s: not paused after a load", j.Spec.Name)
		}
	}
}

// The record's keys for pauses: absent in a state of format 5, which
// loads with none; written only when there is something to say.
func TestPausesOfFormat5(t *testing.T) {
	var r jobRecord
	if err := json.Unmarshal([]byte(`{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"missed":3}`), &r); err != nil {
		t.Fatal(err)
	}
	if got := r.toModel(); got.Pauses != nil || got.Missed != 3 {
		t.Errorf("a format-5 record loads as %+v", got.Pauses)
	}
	b, err := json.Marshal(jobToRecord(&model.JobView{JobState: &model.JobState{}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"pause", "excused", "unjudged", "maintenance_until"} {
		if strings.Contains(string(b), key) {
			t.Errorf("a job never paused saved as %s", b)
		}
	}
	p := model.Pauses{Pause: model.Pause{From: t0, Reason: "x"}, Excused: []model.Span{{From: t0, Until: t0.Add(time.Hour), Reason: "unknown"}, {From: t0, Until: t0, Reason: "a reason from the future"}}}
	p.Unjudged[1] = 4
	rec := pausedToRecord(&p)
	rec.Excused[1].Reason = "a reason from the future"
	back := rec.toModel()
	if len(back.Excused) != 1 || back.Unjudged[1] != 4 || back.Pause.Reason != "x" {
		t.Errorf("round trip %+v", back)
	}
}

// A state directory of format 5 (a snapshot written before pauses) loads
// as it is, and the first save writes the current format with the job's pause.
func TestFormat5MigratesToFormat6(t *testing.T) {
	dir := t.TempDir()
	h, _ := json.Marshal(header{Format: formatName, Version: 5, Kind: "snapshot", Generation: 3, Written: t0.Add(time.Hour), Jobwatch: "0.1.0"})
	buf := appendFrame(nil, h)
	buf = appendFrame(buf, []byte(`{"jobs":{"backup":{"first_watched":"2026-11-30T10:00:00Z","last_success":"2026-11-30T10:30:00Z","durations":{"sum":0,"count":0},"missed":2}}}`))
	buf = appendFrame(buf, []byte(`{"end":true}`))
	if err := os.WriteFile(filepath.Join(dir, SnapshotFile), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, dir)
	v := jobOf(t, m.tr, "backup")
	if v.Missed != 2 || !v.LastSuccess.Equal(t0.Add(30*time.Minute)) || v.Pauses.Why() != "" {
		t.Fatalf("format 5 loaded as missed %d, last success %v, paused %q", v.Missed, v.LastSuccess, v.Pauses.Why())
	}
	if _, err := m.tr.Pause("backup", model.Pause{Reason: "moving"}); err != nil {
		t.Fatal(err)
	}
	m.save(t)
	m.store.Close()
	for _, file := range []string{SnapshotFile, LogFile} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err == nil && strings.Contains(string(b), `"version":5`) {
			t.Errorf("%s still says format 5 after a save", file)
		}
	}
	m2 := newTestModel(t, dir)
	if v := jobOf(t, m2.tr, "backup"); v.Missed != 2 || v.Pauses.Pause.Reason != "moving" {
		t.Errorf("after the save: missed %d, pause %+v", v.Missed, v.Pauses.Pause)
	}
}

func jobOf(t *testing.T, tr *model.Tracker, name string) model.JobView {
	t.Helper()
	jobs, _ := tr.View()
	for _, j := range jobs {
		if j.Spec.Name == name {
			return j
		}
	}
	t.Fatalf("no job %q", name)
	return model.JobView{}
}
