package wrapper

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// The records are byte for byte the format in the issue.
func TestRecordFormat(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 123_456_789, time.UTC)
	t1 := time.Date(2026, 11, 30, 11, 0, 40, 500_000_000, time.FixedZone("CET", 3600))
	cases := []struct {
		name string
		rec  any
		want string
	}{
		{"start", startRecord{Time: formatTime(t0), Job: "stats", Event: "start", Host: "web1", PID: 4242, RunID: "0123456789abcdef"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"start","host":"web1","pid":4242,"run_id":"0123456789abcdef"}`},
		{"end", endRecord{Time: formatTime(t1), Job: "stats", Event: "end", Host: "web1", PID: 4242, RunID: "0123456789abcdef",
			Status: "success", ExitCode: 0, Duration: seconds(t1.Sub(t0))},
			`{"time":"2026-11-30T10:00:40.500Z","job":"stats","event":"end","host":"web1","pid":4242,"run_id":"0123456789abcdef","status":"success","exit_code":0,"duration_seconds":40.377}`},
		{"end, zero duration", endRecord{Time: formatTime(t0), Job: "j", Event: "end", Host: "h", PID: 1, RunID: "0123456789abcdef",
			Status: "failure", ExitCode: 127, Duration: seconds(0)},
			`{"time":"2026-11-30T10:00:00.123Z","job":"j","event":"end","host":"h","pid":1,"run_id":"0123456789abcdef","status":"failure","exit_code":127,"duration_seconds":0}`},
		{"end, lock lost", endRecord{Time: formatTime(t1), Job: "stats", Event: "end", Host: "web1", PID: 4242, RunID: "0123456789abcdef",
			Status: "failure", ExitCode: 125, Duration: 40.377, Reason: "lock_lost"},
			`{"time":"2026-11-30T10:00:40.500Z","job":"stats","event":"end","host":"web1","pid":4242,"run_id":"0123456789abcdef","status":"failure","exit_code":125,"duration_seconds":40.377,"reason":"lock_lost"}`},
		{"skip", skipRecord{Time: formatTime(t0), Job: "stats", Event: "skip", Host: "web1", PID: 4300, Reason: "locked", Lock: "file", HolderPID: 4242, Holder: "4242"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"skip","host":"web1","pid":4300,"reason":"locked","lock":"file","holder_pid":4242,"holder":"4242"}`},
		{"skip, holder unknown", skipRecord{Time: formatTime(t0), Job: "stats", Event: "skip", Host: "web1", PID: 4300, Reason: "locked", Lock: "file"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"skip","host":"web1","pid":4300,"reason":"locked","lock":"file"}`},
		{"skip, redis", skipRecord{Time: formatTime(t0), Job: "stats", Event: "skip", Host: "web2", PID: 4300, Reason: "locked", Lock: "redis", Holder: "web1:4100:0123456789abcdef"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"skip","host":"web2","pid":4300,"reason":"locked","lock":"redis","holder":"web1:4100:0123456789abcdef"}`},
		{"skip, mysql unavailable", skipRecord{Time: formatTime(t0), Job: "stats", Event: "skip", Host: "web2", PID: 4300, Reason: "lock_unavailable", Lock: "mysql"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"skip","host":"web2","pid":4300,"reason":"lock_unavailable","lock":"mysql"}`},
		{"lock lost", lockLostRecord{Time: formatTime(t0), Job: "stats", Event: "lock_lost", Host: "web1", PID: 4242, RunID: "0123456789abcdef", Lock: "redis", Reason: "key_taken", Holder: "web2:4300:fedcba9876543210"},
			`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"lock_lost","host":"web1","pid":4242,"run_id":"0123456789abcdef","lock":"redis","reason":"key_taken","holder":"web2:4300:fedcba9876543210"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.log")
			l := &runLog{path: path}
			if err := l.write(tc.rec); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]float64{
		0: 0, -time.Second: 0, 1499 * time.Microsecond: 0.001, 1500 * time.Microsecond: 0.002,
		40377 * time.Millisecond: 40.377, 90 * time.Minute: 5400,
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%s) = %v, want %v", d, got, want)
		}
	}
}

func TestNewRunID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{16}$`)
	a, b := newRunID(), newRunID()
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Errorf("run ids %q %q", a, b)
	}
}
