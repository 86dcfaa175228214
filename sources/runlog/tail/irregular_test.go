package tail

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// idleWithin reports whether the Tailer of w finished its pass within d.
func idleWithin(w *StepWaker, d time.Duration) bool {
	if w.waiting {
		return true
	}
	_, w.waiting = testproc.Within(w.idle, d)
	return w.waiting
}

// A named pipe, a socket, a device or a directory at the path is refused
// without blocking, reported by Err and logged once, and retried: a regular
// file that later takes its place is read.
func TestNonRegularPathIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		make       func(t *testing.T, path string)
	}{
		{"fifo", "named pipe", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", "socket", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			t.Cleanup(func() { l.Close() })
		}},
		{"device through a symlink", "character device", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", "directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "runs.log")
			tc.make(t, path)
			h := &harness{t: t, path: path, w: NewStepWaker(), done: make(chan struct{}), logs: &logRecorder{}}
			h.tl = New(path, nil, Options{Waker: h.w, Logger: slog.New(h.logs)})
			ctx, cancel := context.WithCancel(context.Background())
			h.cancel = cancel
			go func() {
				defer close(h.done)
				h.tl.Run(ctx, h.collect)
			}()
			if !idleWithin(h.w, 5*time.Second) {
				cancel()
				if _, ok := testproc.Within(h.done, 5*time.Second); !ok {
					t.Fatalf("the Tailer blocked on a %s and a cancel did not stop it", tc.kind)
				}
				t.Fatalf("the Tailer's first pass over a %s did not end within 5s", tc.kind)
			}
			t.Cleanup(h.stop)
			err := h.tl.Err()
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) {
				t.Fatalf("Err() = %v, want ErrNotRegular saying %q", err, tc.kind)
			}
			h.step()
			h.step()
			if n := h.logs.count("cannot open file"); n != 1 {
				t.Errorf("logged %d times that the file cannot be opened, want once", n)
			}
			// A regular file takes its place.
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, "one\ntwo\n")
			equal(t, "lines", h.step(), []string{"one", "two"})
			if err := h.tl.Err(); err != nil {
				t.Errorf("Err() = %v after a regular file appeared", err)
			}
		})
	}
}

// A named pipe that replaces the file being read is a rotation to a file
// that cannot be read: the old file is finished, the pipe refused.
func TestFileReplacedByFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "one\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "first pass", h.take(), []string{"one"})
	appendFile(t, path, "two\n")
	rename(t, path, path+".1")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- h.step() }()
	got := testproc.Receive(t, done, 5*time.Second, "a pass over a named pipe to end")
	equal(t, "after the pipe replaced the file", got, []string{"two"})
	if err := h.tl.Err(); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Err() = %v, want ErrNotRegular", err)
	}
}
