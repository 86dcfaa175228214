package tail

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// runReal runs a Tailer with a real Waker and sends each line it delivers.
func runReal(t *testing.T, path string, opts Options) (*Tailer, <-chan string) {
	t.Helper()
	ch := make(chan string, 1000)
	tl := New(path, nil, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tl.Run(ctx, func(lines []Line, _ Position, _ int) {
			for _, l := range lines {
				ch <- string(l.Text)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return tl, ch
}

func expectLine(t *testing.T, ch <-chan string, want string, within time.Duration) {
	t.Helper()
	if got := testproc.Receive(t, ch, within, fmt.Sprintf("line %q", want)); got != want {
		t.Fatalf("got line %q, want %q", got, want)
	}
}

// expectNoLine checks that no line comes during a window: that something
// does not happen can only be seen over a span of time.
func expectNoLine(t *testing.T, ch <-chan string, during time.Duration) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("unexpected line %q", got)
	case <-time.After(during): // the window
	}
}

// waitLogged waits until logs has n lines containing substr.
func waitLogged(t *testing.T, logs *logRecorder, n int, substr string) {
	t.Helper()
	testproc.WaitUntil(t, 10*time.Second, fmt.Sprintf("%d log lines %q", n, substr), func() bool { return logs.count(substr) >= n })
}

// With inotify, appends and rotations are followed well within 1s, although
// the poll interval is an hour.
func TestFollowsWithInotify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	logs := &logRecorder{}
	_, ch := runReal(t, path, Options{PollInterval: time.Hour, Logger: slog.New(logs)})
	expectLine(t, ch, "a", time.Second)
	for i := range 5 {
		start := time.Now()
		appendFile(t, path, fmt.Sprintf("l%d\n", i))
		expectLine(t, ch, fmt.Sprintf("l%d", i), time.Second)
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("append followed after %v", d)
		}
	}
	rename(t, path, path+".1")
	writeFile(t, path, "rotated\n")
	expectLine(t, ch, "rotated", time.Second)
	os.Remove(path)
	waitLogged(t, logs, 1, "file deleted") // the Tailer saw it gone before it comes back
	writeFile(t, path, "back\n")
	expectLine(t, ch, "back", time.Second)
}

// Without inotify (a poll-only Waker), appends are followed within the poll
// interval.
func TestFollowsByPolling(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	_, ch := runReal(t, path, Options{Waker: NewPollWaker(200 * time.Millisecond)})
	expectLine(t, ch, "a", time.Second)
	appendFile(t, path, "b\n")
	expectLine(t, ch, "b", time.Second)
}

// The directory is created after the Tailer starts: the poll fallback finds
// the file, and the watch is set up once the directory exists.
func TestDirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	path := filepath.Join(dir, "runs.log")
	tl, ch := runReal(t, path, Options{PollInterval: 100 * time.Millisecond})
	testproc.WaitUntil(t, 10*time.Second, "the Tailer to find the file missing", func() bool { return errors.Is(tl.Err(), fs.ErrNotExist) })
	os.Mkdir(dir, 0o755)
	writeFile(t, path, "a\n")
	expectLine(t, ch, "a", time.Second)
	appendFile(t, path, "b\n")
	expectLine(t, ch, "b", time.Second)
}

// inotify queue overflow. The kernel's queue (fs.inotify.max_queued_events)
// is a global setting that a test cannot practically lower, so the
// overflow is forced: the hub drops events, as the kernel does when its
// queue is full, then fsnotify's ErrEventOverflow is injected into the real
// watcher's Errors channel. The Tailer must stat and read its file and lose
// nothing; its poll interval (an hour) cannot be what wakes it.
func TestInotifyOverflow(t *testing.T) {
	h := &hub{}
	dir := t.TempDir()
	var paths []string
	var chans []<-chan string
	logs := &logRecorder{}
	for i := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("runs%d.log", i))
		writeFile(t, path, "a\n")
		w := newWatchWaker(h, path, time.Hour, slog.New(slog.DiscardHandler))
		t.Cleanup(w.close)
		_, ch := runReal(t, path, Options{Waker: w, Logger: slog.New(logs)})
		expectLine(t, ch, "a", time.Second)
		paths, chans = append(paths, path), append(chans, ch)
	}
	h.drop.Store(true)
	for _, p := range paths {
		appendFile(t, p, "b\n")
		appendFile(t, p, "c\n")
	}
	expectNoLine(t, chans[0], 200*time.Millisecond) // the events are lost
	h.mu.Lock()
	errs := h.w.Errors
	h.mu.Unlock()
	errs <- fsnotify.ErrEventOverflow
	for _, ch := range chans {
		expectLine(t, ch, "b", time.Second)
		expectLine(t, ch, "c", time.Second)
	}
	// A Tailer woken by an older event before the overflow reads the lines
	// first and warns at its next wake-up, which comes at once: wait for
	// the warnings, then check that none came twice.
	waitLogged(t, logs, 3, "overflowed")
	h.drop.Store(false)
	appendFile(t, paths[0], "d\n")
	expectLine(t, chans[0], "d", time.Second)
	if n := logs.count("overflowed"); n != 3 {
		t.Errorf("%d overflow warnings, want one per Tailer: %q", n, logs.lines())
	}
}

// Tailers share one inotify instance with one watch per directory, and
// release it when they stop.
func TestHubSharesOneWatch(t *testing.T) {
	h := &hub{}
	dir := t.TempDir()
	var ws []*watchWaker
	for i := range 200 { // more than the usual limit of 128 inotify instances
		ws = append(ws, newWatchWaker(h, filepath.Join(dir, fmt.Sprint(i)), time.Second, slog.New(slog.DiscardHandler)))
	}
	h.mu.Lock()
	if len(h.dirs) != 1 || len(h.w.WatchList()) != 1 {
		t.Errorf("%d directories, %d watches; want 1", len(h.dirs), len(h.w.WatchList()))
	}
	h.mu.Unlock()
	for _, w := range ws {
		if w.sub == nil {
			t.Fatal("not subscribed")
		}
		w.close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w != nil {
		t.Error("watcher not closed after the last Tailer stopped")
	}
}

// Idle Tailers use (almost) no CPU: no busy loop, only inotify and the poll
// timer. 300 Tailers on 300 files, measured over 5s with getrusage.
func TestIdleCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 5s")
	}
	dir := t.TempDir()
	const n = 300
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	read := 0
	idle := make([]atomic.Bool, n) // each Tailer has read its file and waits
	for i := range n {
		path := filepath.Join(dir, fmt.Sprintf("job%03d.log", i))
		writeFile(t, path, "line\n")
		tl := New(path, nil, Options{Idle: func() { idle[i].Store(true) }})
		wg.Add(1)
		go func() {
			defer wg.Done()
			tl.Run(ctx, func(lines []Line, _ Position, _ int) {
				mu.Lock()
				read += len(lines)
				mu.Unlock()
			})
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	testproc.WaitUntil(t, 10*time.Second, "every Tailer to read its line and go idle", func() bool {
		mu.Lock()
		r := read
		mu.Unlock()
		for i := range idle {
			if !idle[i].Load() {
				return false
			}
		}
		return r == n
	})
	before := cpuTime(t)
	const window = 5 * time.Second
	time.Sleep(window) // the measurement window
	used := cpuTime(t) - before
	share := float64(used) / float64(window)
	t.Logf("%d idle Tailers used %v CPU in %v (%.2f%% of one core)", n, used, window, 100*share)
	// The poll timers (1s) fstat and stat each file: a few µs per Tailer
	// and second, several times more under -race and on a loaded machine.
	// A busy loop would use 100% or more.
	limit := 0.05
	if raceEnabled {
		limit = 0.15
	}
	if share > limit {
		t.Errorf("idle Tailers used %.1f%% of a core, want < %.0f%%", 100*share, 100*limit)
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The directory is removed and recreated: its inotify watch is gone with
// it, and is set up again.
func TestDirectoryRemovedAndRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	logs := &logRecorder{}
	_, ch := runReal(t, path, Options{PollInterval: 100 * time.Millisecond, Logger: slog.New(logs)})
	expectLine(t, ch, "a", time.Second)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, logs, 1, "file deleted") // the Tailer saw it gone before it comes back
	os.Mkdir(dir, 0o755)
	writeFile(t, path, "b\n")
	expectLine(t, ch, "b", time.Second)
	appendFile(t, path, "c\n")
	expectLine(t, ch, "c", time.Second)
}

// When inotify cannot be had (the user's instances used up: EMFILE), the
// waker says once that it polls, polls, and says once when the watch works
// again.
func TestWakerLogsInotifyFailureOnce(t *testing.T) {
	dir := t.TempDir()
	fail := true // the constructor runs on this goroutine, in Wait
	h := &hub{newWatcher: func() (*fsnotify.Watcher, error) {
		if fail {
			return nil, syscall.EMFILE
		}
		return fsnotify.NewWatcher()
	}}
	logs := &logRecorder{}
	w := newWatchWaker(h, filepath.Join(dir, "runs.log"), 10*time.Millisecond, slog.New(logs))
	defer w.close()
	for range 5 {
		if err := w.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := logs.count("WARN cannot watch the directory with inotify; polling the file instead"); n != 1 {
		t.Errorf("logged the inotify failure %d times, want once; logs %q", n, logs.lines())
	}
	if w.sub != nil {
		t.Fatal("subscribed although the watcher cannot be made")
	}
	fail = false
	w.Wait(context.Background())
	if w.sub == nil {
		t.Fatal("not subscribed once the watcher can be made")
	}
	if n := logs.count("INFO inotify watch set"); n != 1 {
		t.Errorf("logged the recovery %d times, want once; logs %q", n, logs.lines())
	}
	// A missing directory is not a warning: the tailer says the file is
	// missing.
	logs2 := &logRecorder{}
	w2 := newWatchWaker(h, filepath.Join(dir, "no", "runs.log"), 10*time.Millisecond, slog.New(logs2))
	defer w2.close()
	w2.Wait(context.Background())
	if n := logs2.count("WARN"); n != 0 {
		t.Errorf("a missing directory logged %d warnings: %q", n, logs2.lines())
	}
}
