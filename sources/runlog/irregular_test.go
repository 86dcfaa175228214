package runlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/sources/runlog/tail"
)

// errSink remembers the last health report and its reason.
type errSink struct {
	*healthSink
	mu  sync.Mutex
	err error
}

func (s *errSink) SetHealth(name string, up bool, err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.healthSink.SetHealth(name, up, err)
}

func (s *errSink) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// A named pipe at a run log's path, with its real waker (inotify and
// polling): the source reports down with the reason within a bound, a
// cancel stops it at once, and once a regular file replaces the pipe its
// records are read and the source is up.
func TestRunLogFIFOIsDownNotStuck(t *testing.T) {
	for _, replace := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "runs.log")
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		sink := &errSink{healthSink: newSink("stats")}
		src := newRunLog(t, path, "json")
		src.healthEvery = 10 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, nil, sink) }()
		testproc.WaitUntil(t, 5*time.Second, "the source reported down", func() bool {
			up, n := sink.lastHealth()
			return n > 0 && !up
		})
		if err := sink.lastErr(); !errors.Is(err, tail.ErrNotRegular) {
			t.Errorf("down because of %v, want a named pipe refused", err)
		}
		if replace {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			appendLines(t, path, `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":1,"status":"success"}`)
			testproc.WaitUntil(t, 10*time.Second, "the regular file's record was read", func() bool {
				j, _ := view(t, sink.Tracker, "stats")
				up, _ := sink.lastHealth()
				return j.RunCounts[0] == 1 && up
			})
		}
		cancel()
		if err := testproc.Receive(t, done, 2*time.Second, "Run to return after the cancel"); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
