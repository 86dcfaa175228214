// Package ratelog summarises repeated log records: the first record of a
// kind is logged as it comes, the ones like it that follow within a window
// (a minute by default) are counted, and at the end of each window one
// record says how many there were. A kind is the level, the message and the
// values of the attributes named by the record's Per marker, so that
// "too many runs in progress" is summarised per job and a parse warning per
// source.
//
// Only records that carry a Per marker are summarised; every other record
// passes through unchanged. Without a ratelog Handler in the chain the
// marker is an empty group, which slog's handlers leave out.
package ratelog

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultWindow is how long records of one kind are counted before their
// summary is logged.
const DefaultWindow = time.Minute

// Attribute keys of a summary record.
const (
	// RepeatedKey holds how many records like the summary were not logged.
	RepeatedKey = "repeated"
	// WindowKey holds the window over which they were counted.
	WindowKey = "window"
)

const markerKey = "ratelog"

type marker struct{ keys []string }

// LogValue makes the marker invisible to handlers that do not know it.
func (marker) LogValue() slog.Value { return slog.GroupValue() }

// Per marks a record for summarising per value of the given attributes of
// the same call, for example Per("job"). With no keys, all records of one
// level and message are one kind.
func Per(keys ...string) slog.Attr {
	return slog.Any(markerKey, marker{keys: keys})
}

// Timer is the part of *time.Timer that Handler uses.
type Timer interface{ Stop() bool }

// Clock gives the time and runs functions later; tests step a fake one.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Options configure a Handler. The zero value counts per minute on the
// real clock.
type Options struct {
	Window time.Duration
	Clock  Clock
}

// Handler is a slog.Handler that summarises marked records and passes the
// others to the handler it wraps. Handlers derived from it with WithAttrs
// and WithGroup share its counts.
type Handler struct {
	inner slog.Handler
	lim   *limiter
}

var _ slog.Handler = (*Handler)(nil)

type limiter struct {
	window time.Duration
	clock  Clock

	mu    sync.Mutex
	kinds map[string]*kind
}

// kind is one kind of record seen within the current window.
type kind struct {
	count int          // records not logged in this window
	last  slog.Record  // the last of them, without the marker
	h     slog.Handler // the handler it came through
	timer Timer
}

// New wraps inner.
func New(inner slog.Handler, o Options) *Handler {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Handler{inner: inner, lim: &limiter{window: o.Window, clock: o.Clock, kinds: map[string]*kind{}}}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// WithAttrs returns a Handler whose wrapped handler has the attributes.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(as), lim: h.lim}
}

// WithGroup returns a Handler whose wrapped handler has the group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), lim: h.lim}
}

// Handle logs r, or counts it when a record of its kind was logged within
// the current window.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var m *marker
	r.Attrs(func(a slog.Attr) bool {
		if mk, ok := a.Value.Any().(marker); ok && a.Key == markerKey && a.Value.Kind() == slog.KindLogValuer {
			m = &mk
			return false
		}
		return true
	})
	if m == nil {
		return h.inner.Handle(ctx, r)
	}
	plain := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	values := make(map[string]string, len(m.keys))
	r.Attrs(func(a slog.Attr) bool {
		if _, ok := a.Value.Any().(marker); ok && a.Key == markerKey {
			return true
		}
		plain.AddAttrs(a)
		for _, k := range m.keys {
			if a.Key == k {
				values[k] = a.Value.String()
			}
		}
		return true
	})
	key := kindKey(r.Level, r.Message, m.keys, values)

	l := h.lim
	l.mu.Lock()
	if k := l.kinds[key]; k != nil {
		k.count++
		k.last, k.h = plain, h.inner
		l.mu.Unlock()
		return nil
	}
	k := &kind{h: h.inner}
	l.kinds[key] = k
	k.timer = l.clock.AfterFunc(l.window, func() { l.endWindow(key, k) })
	l.mu.Unlock()
	return h.inner.Handle(ctx, plain)
}

func kindKey(level slog.Level, msg string, keys []string, values map[string]string) string {
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	var b strings.Builder
	b.WriteString(level.String())
	b.WriteByte(0)
	b.WriteString(msg)
	for _, k := range sorted {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(values[k])
	}
	return b.String()
}

// endWindow logs the summary of a window in which records were counted and
// starts another; after a window with none, the next record is logged as it
// comes.
func (l *limiter) endWindow(key string, k *kind) {
	l.mu.Lock()
	if l.kinds[key] != k {
		l.mu.Unlock()
		return // flushed meanwhile
	}
	if k.count == 0 {
		delete(l.kinds, key)
		l.mu.Unlock()
		return
	}
	r, h := l.summary(k), k.h
	k.count = 0
	k.timer = l.clock.AfterFunc(l.window, func() { l.endWindow(key, k) })
	l.mu.Unlock()
	_ = h.Handle(context.Background(), r)
}

// summary is k's last record, timed now, with the count and the window.
func (l *limiter) summary(k *kind) slog.Record {
	r := slog.NewRecord(l.clock.Now(), k.last.Level, k.last.Message, k.last.PC)
	k.last.Attrs(func(a slog.Attr) bool {
		r.AddAttrs(a)
		return true
	})
	r.AddAttrs(slog.Int(RepeatedKey, k.count), slog.Duration(WindowKey, l.window))
	return r
}

// Flush logs the summaries of the current windows now and forgets every
// kind; call it before the process exits so that no count is lost.
func (h *Handler) Flush() {
	l := h.lim
	l.mu.Lock()
	keys := make([]string, 0, len(l.kinds))
	for key := range l.kinds {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	type pending struct {
		h slog.Handler
		r slog.Record
	}
	var out []pending
	for _, key := range keys {
		k := l.kinds[key]
		k.timer.Stop()
		if k.count > 0 {
			out = append(out, pending{k.h, l.summary(k)})
		}
		delete(l.kinds, key)
	}
	l.mu.Unlock()
	for _, p := range out {
		_ = p.h.Handle(context.Background(), p.r)
	}
}
