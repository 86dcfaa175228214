package sources

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/model"
)

type healthCall struct {
	up  bool
	err error
}

type fakeSink struct{ calls []healthCall }

func (s *fakeSink) Apply(model.Batch) {}
func (s *fakeSink) SetHealth(_ string, up bool, err error) {
	s.calls = append(s.calls, healthCall{up, err})
}

// A change of health is reported and logged once; a failure repeated poll
// after poll is neither.
func TestHealthLogsEachChangeOnce(t *testing.T) {
	var logs bytes.Buffer
	sink := &fakeSink{}
	h := NewHealth("db", sink, slog.New(slog.NewTextHandler(&logs, nil)))
	h.Up() // the first report: not logged
	h.Up()
	refused := errors.New("connection refused")
	h.Down("connection", refused, "reason", "connection")
	h.Down("connection", errors.New("connection refused again"), "reason", "connection")
	h.Down("access denied", errors.New("access denied"), "reason", "access denied")
	h.Up()
	h.Down("", errors.New("disk gone"))
	h.Down("", errors.New("disk gone"))
	h.Down("", errors.New("disk still gone"))

	want := []healthCall{{true, nil}, {false, refused}, {false, nil}, {true, nil}, {false, nil}, {false, nil}}
	if len(sink.calls) != len(want) {
		t.Fatalf("health reported %d times, want %d: %v", len(sink.calls), len(want), sink.calls)
	}
	for i, c := range sink.calls {
		if c.up != want[i].up {
			t.Errorf("report %d: up %v, want %v", i, c.up, want[i].up)
		}
	}
	if sink.calls[1].err != refused {
		t.Errorf("down report carries %v", sink.calls[1].err)
	}
	out := logs.String()
	for _, w := range []string{
		`level=ERROR msg="source down" reason=connection err="connection refused"`,
		`level=ERROR msg="source down" reason="access denied"`,
		`level=INFO msg="source up again"`,
		`msg="source down" err="disk gone"`,
		`msg="source down" err="disk still gone"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("log lacks %s:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("%d log lines, want 5:\n%s", n, out)
	}
	if strings.Contains(out, "refused again") {
		t.Errorf("a repeated failure was logged:\n%s", out)
	}
	if h.IsUp() {
		t.Error("IsUp after a failure")
	}
}

func TestHealthMessagesAndLevel(t *testing.T) {
	var logs bytes.Buffer
	h := NewHealth("runs", &fakeSink{}, slog.New(slog.NewTextHandler(&logs, nil)))
	h.DownMsg, h.DownLevel, h.UpMsg = "run log cannot be read", slog.LevelWarn, "run log readable again"
	h.Down("", errors.New("no such file"))
	h.Up()
	out := logs.String()
	if !strings.Contains(out, `level=WARN msg="run log cannot be read" err="no such file"`) || !strings.Contains(out, `level=INFO msg="run log readable again"`) {
		t.Errorf("logs:\n%s", out)
	}
}
