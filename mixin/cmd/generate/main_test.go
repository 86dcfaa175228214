package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/jobwatch/jobwatch/mixin"
)

// TestRun: the command writes every file of the mixin under root, with
// the config given, and replaces what was there.
func TestRun(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"alerts", "dashboards"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, mixin.RulesFile), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	const config = `{"clusterLabel": "cluster"}`
	if err := run(root, config); err != nil {
		t.Fatal(err)
	}
	out, err := mixin.Generate(config)
	if err != nil {
		t.Fatal(err)
	}
	names, files := out.Files()
	for _, name := range names {
		path := filepath.Join(root, filepath.FromSlash(name))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s is not the mixin's output", name)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v; want 0644", name, fi.Mode(), err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(root, "*", ".*.tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
	if err := run(filepath.Join(root, "missing"), ""); err == nil {
		t.Error("writing under a missing directory: no error")
	}
}
