package ratelog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock and runs the functions that fall due, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, rest []*fakeTimer
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// pending counts timers not yet fired nor stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// lines returns what was written since the last call, a line each.
func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.b.String())
	b.b.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func newTest(t *testing.T) (*slog.Logger, *Handler, *fakeClock, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	clock := &fakeClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	text := slog.NewTextHandler(buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.String("time", a.Value.Time().Format("15:04:05"))
		}
		return a
	}})
	h := New(text, Options{Clock: clock})
	return slog.New(stamp{h, clock}), h, clock, buf
}

// stamp times records by the fake clock, as slog.Logger does by the real one.
type stamp struct {
	slog.Handler
	clock *fakeClock
}

func (s stamp) Handle(ctx context.Context, r slog.Record) error {
	r.Time = s.clock.Now()
	return s.Handler.Handle(ctx, r)
}

func (s stamp) WithAttrs(as []slog.Attr) slog.Handler {
	return stamp{s.Handler.WithAttrs(as), s.clock}
}

func (s stamp) WithGroup(name string) slog.Handler { return stamp{s.Handler.WithGroup(name), s.clock} }

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

func TestUnmarkedRecordsPassThrough(t *testing.T) {
	log, _, _, buf := newTest(t)
	for i := range 3 {
		log.Warn("disk full", "job", "a", "try", i)
	}
	equal(t, "lines", buf.lines(), []string{
		`time=09:00:00 level=WARN msg="disk full" job=a try=0`,
		`time=09:00:00 level=WARN msg="disk full" job=a try=1`,
		`time=09:00:00 level=WARN msg="disk full" job=a try=2`,
	})
}

func TestFirstThenCountPerWindow(t *testing.T) {
	log, _, clock, buf := newTest(t)
	for i := range 100 {
		log.Warn("too many runs", Per("job"), "job", "a", "pid", i)
	}
	equal(t, "first window", buf.lines(), []string{`time=09:00:00 level=WARN msg="too many runs" job=a pid=0`})

	clock.Advance(59 * time.Second)
	equal(t, "before the window ends", buf.lines(), nil)
	clock.Advance(time.Second)
	// The summary carries the last record's attributes.
	equal(t, "summary", buf.lines(), []string{`time=09:01:00 level=WARN msg="too many runs" job=a pid=99 repeated=99 window=1m0s`})

	// Records keep coming: counted again, summarised again.
	for i := range 5 {
		log.Warn("too many runs", Per("job"), "job", "a", "pid", 100+i)
	}
	equal(t, "second window", buf.lines(), nil)
	clock.Advance(time.Minute)
	equal(t, "second summary", buf.lines(), []string{`time=09:02:00 level=WARN msg="too many runs" job=a pid=104 repeated=5 window=1m0s`})

	// A quiet window ends the kind: nothing is logged for it, and the next
	// record is logged as it comes.
	clock.Advance(time.Minute)
	equal(t, "quiet window", buf.lines(), nil)
	if n := clock.pending(); n != 0 {
		t.Errorf("%d timers left after a quiet window", n)
	}
	log.Warn("too many runs", Per("job"), "job", "a", "pid", 200)
	equal(t, "after the quiet window", buf.lines(), []string{`time=09:03:00 level=WARN msg="too many runs" job=a pid=200`})
}

func TestKinds(t *testing.T) {
	log, _, clock, buf := newTest(t)
	for range 3 {
		log.Warn("too many runs", Per("job"), "job", "a", "host", "h1")
		log.Warn("too many runs", Per("job"), "job", "b", "host", "h1")
		log.Warn("too many runs", Per("job"), "job", "a", "host", "h2") // host is not part of the kind
		log.Info("too many runs", Per("job"), "job", "a")
		log.Warn("parse error", Per("source"), "source", "s1")
		log.Warn("parse error", Per(), "source", "s2")
	}
	equal(t, "first of each kind", buf.lines(), []string{
		`time=09:00:00 level=WARN msg="too many runs" job=a host=h1`,
		`time=09:00:00 level=WARN msg="too many runs" job=b host=h1`,
		`time=09:00:00 level=INFO msg="too many runs" job=a`,
		`time=09:00:00 level=WARN msg="parse error" source=s1`,
		`time=09:00:00 level=WARN msg="parse error" source=s2`,
	})
	clock.Advance(time.Minute)
	got := buf.lines()
	equal(t, "summaries", sorted(got), sorted([]string{
		`time=09:01:00 level=WARN msg="too many runs" job=a host=h2 repeated=5 window=1m0s`,
		`time=09:01:00 level=WARN msg="too many runs" job=b host=h1 repeated=2 window=1m0s`,
		`time=09:01:00 level=INFO msg="too many runs" job=a repeated=2 window=1m0s`,
		`time=09:01:00 level=WARN msg="parse error" source=s1 repeated=2 window=1m0s`,
		`time=09:01:00 level=WARN msg="parse error" source=s2 repeated=2 window=1m0s`,
	}))
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestDerivedLoggersShareCounts(t *testing.T) {
	log, _, clock, buf := newTest(t)
	a := log.With("source", "runs")
	b := log.WithGroup("g").With("x", 1)
	a.Warn("too many runs", Per("job"), "job", "a")
	b.Warn("too many runs", Per("job"), "job", "a")
	a.Warn("too many runs", Per("job"), "job", "a")
	equal(t, "first", buf.lines(), []string{`time=09:00:00 level=WARN msg="too many runs" source=runs job=a`})
	clock.Advance(time.Minute)
	// The summary goes through the handler of the last record.
	equal(t, "summary", buf.lines(), []string{`time=09:01:00 level=WARN msg="too many runs" source=runs job=a repeated=2 window=1m0s`})
}

func TestMarkerInvisibleWithoutHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    func(*bytes.Buffer) slog.Handler
		want string
	}{
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }, `level=WARN msg="too many runs" job=a`},
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }, `"level":"WARN","msg":"too many runs","job":"a"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			slog.New(tc.h(&b)).Warn("too many runs", Per("job"), "job", "a")
			if got := b.String(); !strings.HasSuffix(strings.TrimSpace(got), tc.want) || strings.Contains(got, markerKey) {
				t.Errorf("got %q, want it to end with %q and not name the marker", got, tc.want)
			}
		})
	}
}

func TestFlush(t *testing.T) {
	log, h, clock, buf := newTest(t)
	for range 4 {
		log.Warn("too many runs", Per("job"), "job", "a")
		log.Warn("too many runs", Per("job"), "job", "b")
	}
	log.Warn("once", Per())
	buf.lines()
	clock.Advance(10 * time.Second)
	h.Flush()
	equal(t, "flushed", buf.lines(), []string{
		`time=09:00:10 level=WARN msg="too many runs" job=a repeated=3 window=1m0s`,
		`time=09:00:10 level=WARN msg="too many runs" job=b repeated=3 window=1m0s`,
	})
	if n := clock.pending(); n != 0 {
		t.Errorf("%d timers left after Flush", n)
	}
	clock.Advance(time.Minute)
	equal(t, "after the flush", buf.lines(), nil)
	log.Warn("too many runs", Per("job"), "job", "a")
	equal(t, "a new window", buf.lines(), []string{`time=09:01:10 level=WARN msg="too many runs" job=a`})
}

// With the real clock the summary comes by itself once the window ends.
// The window is a second: both calls must fall in it on a loaded machine
// too (at 10 ms the second was once a window of its own).
func TestRealClock(t *testing.T) {
	buf := &syncBuffer{}
	log := slog.New(New(slog.NewTextHandler(buf, nil), Options{Window: time.Second}))
	log.Warn("w", Per())
	log.Warn("w", Per())
	var lines []string
	testproc.Eventually(t, 10*time.Second, "the summary", func() error {
		if lines = append(lines, buf.lines()...); len(lines) < 2 {
			return fmt.Errorf("got %q", lines)
		}
		return nil
	})
	if len(lines) != 2 || !strings.Contains(lines[1], "repeated=1 window=1s") {
		t.Fatalf("with the real clock, got %q", lines)
	}
}

func TestConcurrent(t *testing.T) {
	log, h, clock, buf := newTest(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				log.Warn("too many runs", Per("job"), "job", fmt.Sprint("j", g%2), "i", i)
				if i%250 == 0 {
					clock.Advance(20 * time.Second)
				}
			}
		}()
	}
	wg.Wait()
	h.Flush()
	total := 0
	for _, l := range buf.lines() {
		var n int
		if i := strings.Index(l, "repeated="); i >= 0 {
			fmt.Sscanf(l[i:], "repeated=%d", &n)
			total += n
		} else {
			total++
		}
	}
	if total != 8000 {
		t.Errorf("logged and counted %d records, want 8000", total)
	}
}
