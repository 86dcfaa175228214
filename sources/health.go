package sources

import (
	"context"
	"log/slog"
)

// Health reports a source's health to its sink and logs each change once:
// the first failure of a kind and the recovery after it are logged, a
// failure repeated poll after poll is not. Every source uses it, so that
// they all log and report alike. It is not safe for concurrent use: one
// goroutine of the source owns it.
type Health struct {
	name string
	sink Sink
	log  *slog.Logger
	// DownMsg and DownLevel log a new failure; UpMsg logs a recovery.
	DownMsg   string
	DownLevel slog.Level
	UpMsg     string

	known  bool // up or down was reported
	up     bool
	reason string
}

// NewHealth returns the health of source name, reported to sink and logged
// to log (which should name the source). Failures are logged at error
// level as "source down", recoveries as "source up again", unless the
// fields say otherwise.
func NewHealth(name string, sink Sink, log *slog.Logger) *Health {
	return &Health{name: name, sink: sink, log: log, DownMsg: "source down", DownLevel: slog.LevelError, UpMsg: "source up again"}
}

// Down reports the source down because of err. reason is what makes two
// failures the same one (a class such as "table missing"); empty, err's
// text is. A new reason is logged with attrs and reported; a repeated one
// is neither.
func (h *Health) Down(reason string, err error, attrs ...any) {
	if reason == "" && err != nil {
		reason = err.Error()
	}
	if h.known && !h.up && h.reason == reason {
		return
	}
	h.known, h.up, h.reason = true, false, reason
	h.log.Log(context.Background(), h.DownLevel, h.DownMsg, append(attrs, "err", err)...)
	h.sink.SetHealth(h.name, false, err)
}

// Up reports the source readable. The first report is not logged, a
// recovery is; a source already up is not reported again.
func (h *Health) Up() {
	if h.known && h.up {
		return
	}
	if h.known {
		h.log.Info(h.UpMsg)
	}
	h.known, h.up, h.reason = true, true, ""
	h.sink.SetHealth(h.name, true, nil)
}

// IsUp reports whether the last report was up.
func (h *Health) IsUp() bool { return h.known && h.up }
