package wrapper

import (
	"fmt"
	"testing"
	"time"
)

// The reaper's protocol lines: what each side reads of the other.
func TestReaperLines(t *testing.T) {
	for _, tc := range []struct {
		line     string
		deadline time.Duration
		ended    time.Duration
		stopped  bool
	}{
		{"deadline 123", 123, 0, false},
		{"exited 456 0", 0, 456, false},
		{"exited 456 1", 0, 456, true},
		{"deadline -1", 0, 0, false},
		{"deadline ", 0, 0, false},
		{"exited 456 2", 0, 0, false},
		{"exited 456  1", 0, 0, false},
		{"exited x 1", 0, 0, false},
		{"started 12", 0, 0, false},
	} {
		d, dok := parseDeadline(tc.line)
		e, s, eok := parseExited(tc.line)
		if d != tc.deadline || dok != (tc.deadline != 0) || e != tc.ended || s != tc.stopped || eok != (tc.ended != 0) {
			t.Errorf("%q: deadline %v %v, exited %v %v %v", tc.line, d, dok, e, s, eok)
		}
	}
}

// The monotonic conversions agree with Go's own clock within a
// millisecond, on real time.Now() values (with monotonic readings).
func TestMonoConversions(t *testing.T) {
	now := time.Now()
	at := now.Add(3 * time.Second)
	back := timeAtMono(monoAt(at))
	if d := back.Sub(at); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("time -> CLOCK_MONOTONIC -> time moved it by %s", d)
	}
	if m := monoNow(); m <= 0 {
		t.Errorf("CLOCK_MONOTONIC %d", m)
	}
}

// FuzzReaperLines: no line makes either reader panic, and what is read
// reads the same once written back.
func FuzzReaperLines(f *testing.F) {
	for _, s := range []string{"deadline 1", "exited 2 1", "exited 3 0", "deadline", "exited  1", "deadline 9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if d, ok := parseDeadline(line); ok {
			if d <= 0 {
				t.Errorf("%q: deadline %d", line, d)
			}
		}
		if e, s, ok := parseExited(line); ok {
			stopped := 0
			if s {
				stopped = 1
			}
			again := fmt.Sprintf("exited %d %d", int64(e), stopped)
			if e2, s2, ok2 := parseExited(again); !ok2 || e2 != e || s2 != s {
				t.Errorf("%q read as %q, which reads as %v %v %v", line, again, e2, s2, ok2)
			}
		}
	})
}
