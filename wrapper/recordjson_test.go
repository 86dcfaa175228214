package wrapper

import (
	"encoding/json"
	"math"
	"testing"
)

func recordsOf(s string, n int, f float64) []any {
	return []any{
		startRecord{Time: s, Job: s, Event: "start", Host: s, PID: n, RunID: s},
		startRecord{Time: s, Job: s, Event: "start", Host: s, PID: n, RunID: s, LockTTL: f},
		endRecord{Time: s, Job: s, Event: "end", Host: s, PID: n, RunID: s, Status: s, ExitCode: n, Duration: f},
		endRecord{Time: s, Job: s, Event: "end", Host: s, PID: n, RunID: s, Status: s, ExitCode: n, Duration: f, Reason: s},
		skipRecord{Time: s, Job: s, Event: "skip", Host: s, PID: n, Reason: s, Lock: s},
		skipRecord{Time: s, Job: s, Event: "skip", Host: s, PID: n, Reason: s, Lock: s, HolderPID: n, Holder: s},
		lockLostRecord{Time: s, Job: s, Event: "lock_lost", Host: s, PID: n, RunID: s, Lock: s, Reason: s},
		lockLostRecord{Time: s, Job: s, Event: "lock_lost", Host: s, PID: n, RunID: s, Lock: s, Reason: s, Holder: s},
	}
}

func checkRecordJSON(t *testing.T, rec any) {
	t.Helper()
	want, werr := json.Marshal(rec)
	got, gerr := marshalRecord(rec)
	if (werr != nil) != (gerr != nil) || string(got) != string(want) {
		t.Errorf("%#v:\n got %s (%v)\nwant %s (%v)", rec, got, gerr, want, werr)
	}
}

func TestRecordJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		f    float64
	}{
		{"plain", "2026-12-01T10:00:00.000Z", 4242, 1.5},
		{"empty", "", 0, 0},
		{"negative zero and int", "x", -3, math.Copysign(0, -1)},
		{"milliseconds", "web-1.example.org", 1 << 30, 0.001},
		{"large", "a b", math.MaxInt32, 86400 * 365 * 100},
		{"tiny and huge floats", "a", 1, 1e-7},
		{"huge float", "a", 1, 1e22},
		{"escapes", "q\"b\\s\n\t\r\x00\x1f", 1, 2},
		{"html", "<a href='x'>&</a>", 1, 2},
		{"unicode", "Grüße \u2028\u2029 ☃", 1, 2},
		{"invalid UTF-8", "a\xffb\xc3", 1, 2},
		{"NaN", "a", 1, math.NaN()},
		{"Inf", "a", 1, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rec := range recordsOf(tc.s, tc.n, tc.f) {
				checkRecordJSON(t, rec)
			}
		})
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add("2026-12-01T10:00:00.000Z", 4242, 1.5)
	f.Add("<\u2028\xff\"", -1, 1e-7)
	f.Fuzz(func(t *testing.T, s string, n int, d float64) {
		for _, rec := range recordsOf(s, n, d) {
			checkRecordJSON(t, rec)
		}
	})
}
