package tail

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Waker decides when an idle Tailer looks at its file again. A Tailer only
// ever stats and reads: a wake is a hint, never a description of what
// changed, so spurious or coalesced wakes lose nothing.
type Waker interface {
	// Wait blocks until the Tailer should stat and read its file again. It
	// returns ctx.Err() when ctx is done.
	Wait(ctx context.Context) error
}

// NewPollWaker returns a Waker that wakes every d, without inotify.
func NewPollWaker(d time.Duration) Waker {
	if d <= 0 {
		d = DefaultPollInterval
	}
	return &pollWaker{d: d}
}

type pollWaker struct{ d time.Duration }

func (w *pollWaker) Wait(ctx context.Context) error {
	t := time.NewTimer(w.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// StepWaker lets a test step a Tailer deterministically: the Tailer reads
// only when the test calls Step, and Step returns once that pass is over (all
// its callbacks have returned). Use one StepWaker per Tailer, from one test
// goroutine.
type StepWaker struct {
	wake    chan struct{}
	idle    chan struct{}
	waiting bool
}

// NewStepWaker returns a StepWaker for one Tailer.
func NewStepWaker() *StepWaker {
	return &StepWaker{wake: make(chan struct{}), idle: make(chan struct{})}
}

// Wait implements Waker.
func (w *StepWaker) Wait(ctx context.Context) error {
	select {
	case w.idle <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stepTimeout bounds how long Idle waits, so that a broken test fails
// instead of hanging.
const stepTimeout = 30 * time.Second

// Idle blocks until the Tailer has finished its current pass (its first one,
// after Run starts) and waits to be woken.
func (w *StepWaker) Idle() {
	if w.waiting {
		return
	}
	select {
	case <-w.idle:
		w.waiting = true
	case <-time.After(stepTimeout):
		panic("tail.StepWaker: the Tailer did not become idle within 30s")
	}
}

// Step wakes the Tailer for one pass and returns when the pass is over.
func (w *StepWaker) Step() {
	w.Idle()
	w.wake <- struct{}{}
	w.waiting = false
	w.Idle()
}

// watchWaker is the default Waker: an inotify watch on the file's directory
// (shared by all Tailers of the process through a hub) plus a poll timer,
// the fallback when inotify misses something or is unavailable.
type watchWaker struct {
	hub   *hub
	dir   string
	base  string
	poll  time.Duration
	log   *slog.Logger
	sub   *subscription
	timer *time.Timer
	// subErr is why the last subscription failed ("" if it worked), so
	// that each failure is logged once, not once a poll.
	subErr string
}

func newWatchWaker(h *hub, path string, poll time.Duration, log *slog.Logger) *watchWaker {
	w := &watchWaker{hub: h, dir: filepath.Dir(path), base: filepath.Base(path), poll: poll, log: log}
	// Subscribe before the first read, so that no change after it is missed.
	w.subscribe()
	return w
}

// subscribe watches the directory, and logs a failure to (only polling the
// file is then left) and a recovery after one, each once.
func (w *watchWaker) subscribe() bool {
	sub, err := w.hub.subscribe(w.dir, w.base)
	w.sub = sub
	switch {
	case err == nil:
		if w.subErr != "" {
			w.log.Info("inotify watch set on the directory; no longer only polling", "dir", w.dir)
		}
		w.subErr = ""
		return true
	case err.Error() == w.subErr:
	case errors.Is(err, fs.ErrNotExist):
		// The tailer says the file is missing; the watch follows when
		// the directory is created.
		w.log.Debug("directory does not exist; polling until it does", "dir", w.dir, "poll_interval", w.poll)
	default:
		w.log.Warn("cannot watch the directory with inotify; polling the file instead", "dir", w.dir, "poll_interval", w.poll, "err", err)
	}
	w.subErr = err.Error()
	return false
}

func (w *watchWaker) Wait(ctx context.Context) error {
	if w.sub == nil || w.sub.dead.Load() {
		if w.sub != nil {
			w.hub.unsubscribe(w.sub)
			w.sub = nil
		}
		// The directory was missing or removed: try again. A fresh watch
		// may have missed changes, so look at the file now if it worked.
		if w.subscribe() {
			return ctx.Err()
		}
	}
	// Every tailer's poll falls on the same whole multiples of the interval
	// (at least half an interval away): hundreds of idle tailers then wake
	// the process once a second together, not hundreds of times apart.
	d := time.Until(time.Now().Add(w.poll / 2).Truncate(w.poll).Add(w.poll))
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	var c chan struct{}
	if w.sub != nil {
		c = w.sub.c
	}
	select {
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	case <-c:
		w.timer.Stop()
	case <-w.timer.C:
	}
	return nil
}

// overflowed reports (once) that inotify lost events since the last call.
func (w *watchWaker) overflowed() bool {
	return w.sub != nil && w.sub.overflow.Swap(false)
}

func (w *watchWaker) close() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.sub != nil {
		w.hub.unsubscribe(w.sub)
		w.sub = nil
	}
}

// hub shares one inotify instance (fsnotify.Watcher) among all Tailers of the
// process, with one watch per directory: the kernel limits inotify instances
// per user (often to 128), not Tailers.
type hub struct {
	mu   sync.Mutex
	w    *fsnotify.Watcher
	done chan struct{}
	dirs map[string]map[*subscription]struct{}

	// drop is a test hook: events are dropped, as the kernel does when its
	// queue overflows.
	drop atomic.Bool
	// newWatcher makes the inotify instance (nil: fsnotify.NewWatcher).
	// Tests make it fail, as it does when the user's inotify instances
	// (fs.inotify.max_user_instances) are used up.
	newWatcher func() (*fsnotify.Watcher, error)
}

var defaultHub hub

type subscription struct {
	dir, base string
	c         chan struct{} // capacity 1: wakes coalesce, none is lost
	dead      atomic.Bool   // the directory's watch is gone
	overflow  atomic.Bool
}

func (s *subscription) wake() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

func (h *hub) subscribe(dir, base string) (*subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		nw := h.newWatcher
		if nw == nil {
			nw = fsnotify.NewWatcher
		}
		w, err := nw()
		if err != nil {
			return nil, fmt.Errorf("inotify: %w", err)
		}
		h.w, h.done = w, make(chan struct{})
		h.dirs = map[string]map[*subscription]struct{}{}
		go h.loop(w, h.done)
	}
	subs := h.dirs[dir]
	if subs == nil {
		if err := h.w.Add(dir); err != nil {
			return nil, fmt.Errorf("inotify watch: %w", err)
		}
		subs = map[*subscription]struct{}{}
		h.dirs[dir] = subs
	}
	s := &subscription{dir: dir, base: base, c: make(chan struct{}, 1)}
	subs[s] = struct{}{}
	return s, nil
}

func (h *hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	subs := h.dirs[s.dir]
	if _, ok := subs[s]; ok {
		delete(subs, s)
		if len(subs) == 0 {
			delete(h.dirs, s.dir)
			h.w.Remove(s.dir)
		}
	}
	if h.w == nil || len(h.dirs) > 0 {
		h.mu.Unlock()
		return
	}
	w, done := h.w, h.done
	h.w, h.done, h.dirs = nil, nil, nil
	h.mu.Unlock()
	w.Close()
	<-done
}

func (h *hub) loop(w *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	errs := w.Errors
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			h.dispatch(ev)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			h.lost(err)
		}
	}
}

// dispatch wakes the Tailers of the event's directory whose file, or one of
// its rotated siblings, the event names.
func (h *hub) dispatch(ev fsnotify.Event) {
	if h.drop.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if subs, ok := h.dirs[ev.Name]; ok && ev.Op.Has(fsnotify.Remove|fsnotify.Rename) {
		// The directory itself went away, and its watch with it.
		delete(h.dirs, ev.Name)
		for s := range subs {
			s.dead.Store(true)
			s.wake()
		}
		return
	}
	dir, name := filepath.Split(ev.Name)
	for s := range h.dirs[filepath.Clean(dir)] {
		if strings.HasPrefix(name, s.base) {
			s.wake()
		}
	}
}

// lost handles an error from inotify. On a queue overflow (or any other
// error) events may be lost, so every Tailer is woken to stat and read its
// file: nothing is lost, as Tailers never rely on what an event says.
func (h *hub) lost(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	overflow := errors.Is(err, fsnotify.ErrEventOverflow)
	for _, subs := range h.dirs {
		for s := range subs {
			if overflow {
				s.overflow.Store(true)
			}
			s.wake()
		}
	}
}
