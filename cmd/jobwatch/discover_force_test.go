package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// discoverArgs runs `jobwatch discover ARGS...` in-process, flags parsed as
// the binary parses them.
func discoverArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	app := kingpin.New("jobwatch", "")
	_, f := addDiscoverCommand(app)
	if _, err := app.Parse(append([]string{"discover"}, args...)); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	code = f(&o, &e)
	return o.String(), e.String(), code
}

// An existing --output file is replaced only with --force, or when it is the
// --merge file; --output - prints to stdout as before.
func TestDiscoverRefusesToOverwrite(t *testing.T) {
	root := filepath.Join("..", "..", "discover", "testdata", "debian")
	dir := t.TempDir()
	out := filepath.Join(dir, "jobwatch.yml")
	mine := []byte("# my own config\njobs: []\n")
	if err := os.WriteFile(out, mine, 0o644); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := discoverArgs(t, "--root", root, "--output", out)
	want := "jobwatch discover: " + out + " exists: give --force to replace it (or --merge " + out + " to add the host's jobs to it)\n"
	if code != 2 || stderr != want || stdout != "" {
		t.Errorf("exit %d stdout %q stderr %q, want 2 and %q", code, stdout, stderr, want)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, mine) {
		t.Errorf("the file was changed:\n%s", b)
	}

	// A symlink there is not followed, nor replaced.
	link := filepath.Join(dir, "link.yml")
	if err := os.Symlink(filepath.Join(dir, "target.yml"), link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := discoverArgs(t, "--root", root, "--output", link); code != 2 || !strings.Contains(stderr, "--force") {
		t.Errorf("symlink: exit %d stderr %q, want 2 and --force", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "target.yml")); !os.IsNotExist(err) {
		t.Errorf("the symlink's target was created")
	}

	// --force replaces it.
	if _, stderr, code := discoverArgs(t, "--root", root, "--output", out, "--force"); code != 1 {
		t.Fatalf("--force: exit %d, want 1 (warnings)\n%s", code, stderr)
	}
	forced, _ := os.ReadFile(out)
	if bytes.Equal(forced, mine) || !strings.Contains(string(forced), "jobs:") {
		t.Errorf("--force did not replace the file:\n%s", forced)
	}

	// Merging into the same file needs no --force.
	if _, stderr, code := discoverArgs(t, "--root", root, "--merge", out, "--output", out); code != 1 {
		t.Fatalf("--merge F --output F: exit %d\n%s", code, stderr)
	}
	// Merging into another existing file does.
	other := filepath.Join(dir, "other.yml")
	if err := os.WriteFile(other, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := discoverArgs(t, "--root", root, "--merge", out, "--output", other); code != 2 || !strings.Contains(stderr, other+" exists: give --force") {
		t.Errorf("--merge A --output B: exit %d stderr %q, want 2", code, stderr)
	}

	// A new file is written, mode 0640; - is stdout, whatever exists.
	fresh := filepath.Join(dir, "new.yml")
	if _, stderr, code := discoverArgs(t, "--root", root, "--output", fresh); code != 1 {
		t.Fatalf("new file: exit %d\n%s", code, stderr)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("new file: %v %v, want mode 0640", fi, err)
	}
	if stdout, _, code := discoverArgs(t, "--root", root, "--output", "-"); code != 1 || !strings.Contains(stdout, "jobs:") {
		t.Errorf("--output -: exit %d stdout %q", code, stdout)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("directory holds %d entries, want 4 (no temporary left): %v", len(ents), ents)
	}
}
