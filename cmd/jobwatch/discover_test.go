package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiscover runs the real binary on the fixture trees: the config it
// writes passes jobwatch check-config, findings go to stderr, warnings make
// it exit 1, and --merge keeps what is there.
func TestDiscover(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	run := func(t *testing.T, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		// A deadline, so that a discover that blocks fails the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	for _, fixture := range []string{"debian", "cronie", "example"} {
		root := filepath.Join("..", "..", "discover", "testdata", fixture)
		t.Run(fixture, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "jobwatch.yml")
			_, stderr, code := run(t, "discover", "--root", root, "--output", out)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (the fixture has warnings); stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, ": warning: no_timeout") || !strings.Contains(stderr, out+": ") {
				t.Errorf("stderr lacks the findings or the summary:\n%s", stderr)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", fi.Mode().Perm())
			}
			if o, e, code := run(t, "check-config", "--config.file", out); code != 0 {
				t.Fatalf("check-config on the generated file: exit %d\n%s%s", code, o, e)
			}

			// JSON: the config on stdout, findings as JSON lines.
			stdout, stderr, code := run(t, "discover", "--root", root, "--output", "-", "--format", "json")
			if code != 1 {
				t.Fatalf("json: exit %d", code)
			}
			var cfg map[string]any
			if err := json.Unmarshal([]byte(stdout), &cfg); err != nil || cfg["jobs"] == nil {
				t.Fatalf("json config: %v\n%s", err, stdout)
			}
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				var f map[string]any
				if err := json.Unmarshal([]byte(l), &f); err != nil || f["severity"] == nil {
					t.Errorf("finding line %q: %v", l, err)
				}
			}
			js := filepath.Join(dir, "jobwatch.json")
			if err := os.WriteFile(js, []byte(stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			if o, e, code := run(t, "check-config", "--config.file", js); code != 0 {
				t.Fatalf("check-config on the JSON config: exit %d\n%s%s", code, o, e)
			}

			// Merging into the file written first adds nothing.
			before, _ := os.ReadFile(out)
			if _, e, code := run(t, "discover", "--root", root, "--merge", out, "--output", out); code != 1 {
				t.Fatalf("merge: exit %d\n%s", code, e)
			}
			after, _ := os.ReadFile(out)
			if !bytes.Equal(before, after) {
				t.Errorf("merging a host into its own config changed it:\n%s\n---\n%s", before, after)
			}
		})
	}

	t.Run("no warnings", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "etc", "cron.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		line := "0 5 * * * root jobwatch run --job ok --lock /run/lock/ok.lock --timeout 10m -- /bin/true\n"
		if err := os.WriteFile(filepath.Join(root, "etc", "cron.d", "ok"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := run(t, "discover", "--root", root, "--output", "-")
		if code != 0 || stderr != "" || !strings.Contains(stdout, "name: ok") {
			t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
		}
	})
	t.Run("merge from a named pipe", func(t *testing.T) {
		// Refused at once, not read for ever: nothing writes to it.
		fifo := filepath.Join(t.TempDir(), "jobwatch.yml")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "discover", "--root", t.TempDir(), "--merge", fifo, "--output", "-")
		if code != 2 || !strings.Contains(stderr, "--merge") || !strings.Contains(stderr, "named pipe") {
			t.Fatalf("exit %d, stderr %q; want 2 and the pipe refused", code, stderr)
		}
	})
	t.Run("bad root", func(t *testing.T) {
		if _, stderr, code := run(t, "discover", "--root", filepath.Join(t.TempDir(), "none"), "--output", "-"); code != 2 || stderr == "" {
			t.Fatalf("exit %d, stderr %q; want 2 and a message", code, stderr)
		}
	})
}
