package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The quick start run twice with data/ kept: genlog resets the example's
// state along with its log, and says so, so the runs are not counted twice.
func TestResetsTheExampleState(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("examples", 0o755); err != nil {
		t.Fatal(err)
	}
	gen := func() (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := genlog([]string{"-now", "2026-12-01T09:20:00Z"}, &out, &errb); code != 0 {
			t.Fatalf("genlog: exit %d, stderr %q", code, errb.String())
		}
		return out.String(), errb.String()
	}
	// First run: no state yet, nothing said.
	if out, errs := gen(); out != "" || errs != "" {
		t.Errorf("first run: stdout %q stderr %q, want nothing", out, errs)
	}
	// jobwatch ran on it and saved (its files, a leftover, and the lock).
	if err := os.Mkdir("data", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state.snap", "state.log", "state.log.tmp123", "lock"} {
		if err := os.WriteFile(filepath.Join("data", f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errs := gen()
	want := "genlog: removed the example's state in data/ (state.log, state.log.tmp123, state.snap), so that jobwatch reads the new examples/runs.log from its start and counts its runs once\n"
	if out != want || errs != "" {
		t.Errorf("second run: stdout %q stderr %q, want %q", out, errs, want)
	}
	if _, err := os.Lstat("data"); !os.IsNotExist(err) {
		t.Errorf("data/ still there: %v", err)
	}
	if fi, err := os.Stat(filepath.Join("examples", "runs.log")); err != nil || fi.Size() == 0 {
		t.Errorf("examples/runs.log: %v %v", fi, err)
	}
}

// Files that are not jobwatch's are kept, and the directory with them.
func TestResetKeepsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "data")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state.snap", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(state, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := genlog([]string{"-o", filepath.Join(dir, "runs.log"), "-state", state}, &out, &errb); code != 0 {
		t.Fatalf("exit %d stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "(state.snap)") {
		t.Errorf("stdout %q, want state.snap removed", out.String())
	}
	if _, err := os.Stat(filepath.Join(state, "notes.txt")); err != nil {
		t.Errorf("notes.txt: %v", err)
	}
}

// The state of a jobwatch still running (its lock held) is left alone, and
// the log too.
func TestResetRefusesStateInUse(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "data")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "state.snap"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(state, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "runs.log")
	var out, errb bytes.Buffer
	code := genlog([]string{"-o", log, "-state", state}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "in use by a running jobwatch: stop it first") {
		t.Errorf("exit %d stderr %q, want 1 and the state in use", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(state, "state.snap")); err != nil {
		t.Errorf("state.snap: %v", err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Errorf("the log was written: %v", err)
	}
}
