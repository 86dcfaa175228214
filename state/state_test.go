package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"jobwatch/model"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if snap, err := s.Load(); err != nil || snap != nil {
		t.Fatalf("empty directory: %v, %v; want nil, nil", snap, err)
	}
	want := &model.Snapshot{Version: model.SnapshotVersion, Saved: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC),
		Jobs:    map[string]model.SavedJob{"stats": {JobState: model.JobState{Skips: 3}}},
		Sources: map[string]*model.SourceState{"runs": {Records: 7, Position: json.RawMessage(`{"offset":9}`)}}}
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("got %s\nwant %s", b, a)
	}
	for _, p := range []string{dir, s.Path()} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: readable by others", p, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestCorruptStateIsAnErrorNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(s.Path(), []byte(`{"version":1,"jobs":{`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Load()
	if err == nil || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Load of a truncated file: %v; want an error naming %s", err, s.Path())
	}
}

func TestStateFileSymlinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(target, []byte(`{"version":1}`), 0o600)
	if err := os.Symlink(target, s.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil {
		t.Fatal("Load followed a symlink")
	}
	// Save replaces the link itself, never writes through it.
	if err := s.Save(&model.Snapshot{Version: model.SnapshotVersion}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != `{"version":1}` {
		t.Fatalf("Save wrote through the symlink: %s", b)
	}
}

func TestDirectoryIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v; want in use", err)
	}
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}
