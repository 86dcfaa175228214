package tail

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// harness runs a Tailer stepped by a StepWaker and records what it delivers.
type harness struct {
	t      *testing.T
	path   string
	tl     *Tailer
	w      *StepWaker
	cancel context.CancelFunc
	done   chan struct{}
	logs   *logRecorder

	mu     sync.Mutex
	lines  []string // TooLong lines are prefixed "!"
	nums   []int64
	pos    Position
	resets int
	calls  int
}

func startTailer(t *testing.T, path string, from *Position, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, path: path, w: NewStepWaker(), done: make(chan struct{}), logs: &logRecorder{}}
	opts.Waker = h.w
	opts.Logger = slog.New(h.logs)
	h.tl = New(path, from, opts)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		if err := h.tl.Run(ctx, h.collect); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	h.w.Idle()
	t.Cleanup(h.stop)
	return h
}

// collect checks the callback's invariants and records the lines.
func (h *harness) collect(lines []Line, pos Position, resets int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if len(lines) > BatchLines {
		h.t.Errorf("batch of %d lines, more than %d", len(lines), BatchLines)
	}
	for i, l := range lines {
		if want := pos.Line - int64(len(lines)) + int64(i) + 1; l.Number != want {
			h.t.Errorf("line %q has number %d, want %d (pos %+v)", l.Text, l.Number, want, pos)
		}
		s := string(l.Text)
		if l.TooLong {
			s = "!" + s
		}
		h.lines = append(h.lines, s)
		h.nums = append(h.nums, l.Number)
	}
	if len(lines) == 0 && resets == 0 {
		h.t.Errorf("empty callback")
	}
	h.pos = pos
	h.resets += resets
}

// step runs one pass and returns the lines delivered since the last take.
func (h *harness) step() []string {
	h.t.Helper()
	h.w.Step()
	return h.take()
}

func (h *harness) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lines
	h.lines, h.nums = nil, nil
	return l
}

// firstNumber is the Number of the first line not yet taken (0: none).
func (h *harness) firstNumber() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.nums) == 0 {
		return 0
	}
	return h.nums[0]
}

func (h *harness) position() Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pos
}

func (h *harness) totalResets() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.resets
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// logRecorder is a slog.Handler keeping the records' levels and messages.
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.recs {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string) {
	t.Helper()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

// fdsUnder lists the process's open fds whose target is under dir, as
// readlink shows them (deleted files end in " (deleted)").
func fdsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, target)
		}
	}
	return out
}

func assertNoDeletedFDs(t *testing.T, dir string) {
	t.Helper()
	for _, fd := range fdsUnder(t, dir) {
		if strings.HasSuffix(fd, "(deleted)") {
			t.Errorf("fd of a deleted file left open: %s", fd)
		}
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}
