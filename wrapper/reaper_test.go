package wrapper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/redact"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
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

// unrenewedRemote's lock is a lease of --lock-ttl, acquired at once, whose
// Watch never renews it nor reports: a wrapper paused or starved from the
// job's start on, before its first renewal.
type unrenewedRemote struct{}

func (unrenewedRemote) Table(Options, *redact.Redactor) (Table, error) {
	return nil, errors.New("no table here")
}

func (unrenewedRemote) SharedLock(o Options, _ string, _ *redact.Redactor) (SharedLock, error) {
	return &unrenewedLock{ttl: o.LockTTL, killAfter: o.KillAfter}, nil
}

type unrenewedLock struct {
	ttl, killAfter time.Duration
	got            time.Time
}

func (l *unrenewedLock) Layer() string { return LayerRedis }
func (l *unrenewedLock) Acquire(context.Context) (bool, string, error) {
	l.got = time.Now()
	return true, "", nil
}
func (l *unrenewedLock) Watch(ctx context.Context, _ func(time.Time)) (LockLoss, bool) {
	<-ctx.Done()
	return LockLoss{}, false
}
func (l *unrenewedLock) Release(context.Context, time.Time) (LockLoss, bool, error) {
	return LockLoss{}, false, nil
}
func (l *unrenewedLock) Close()                  {}
func (l *unrenewedLock) LeaseTTL() time.Duration { return l.ttl }
func (l *unrenewedLock) StopAt() time.Time {
	return l.got.Add(l.ttl - StopMargin(l.ttl, l.killAfter))
}
func (l *unrenewedLock) Held() []*os.File              { return nil }
func (l *unrenewedLock) FencingToken() (string, error) { return "", nil }

// A lease never renewed, as when the wrapper is paused right after its
// start record, before its first renewal reaches the reaper: the reaper
// holds the acquisition's stop deadline from the job's start and stops the
// job by it, and the wrapper records the lock lost. (Before, the reaper had
// no deadline until the first renewal, and the job ran on past its lease.)
func TestReaperHoldsAcquisitionDeadline(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.log")
	cmd := wrapCmd(t, "--job", "j", "--log", log, "--lock-redis", "redis://unrenewed", "--lock-ttl", "1s",
		"--kill-after", "100ms", "--", "sleep", "600")
	cmd.Env = append(cmd.Env, testUnrenewedEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL); cmd.Process.Kill() })
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// A deadline for a broken reaper, not a measure: the lease stops the
	// job about 0.65 s after the start, the job would sleep 600 s.
	testproc.Receive(t, done, 2*time.Minute, "the wrapper to end, its job stopped by the reaper")
	if code := cmd.ProcessState.ExitCode(); code != ExitWrapper || !strings.Contains(stderr.String(), "not renewed in time") {
		t.Errorf("exit %d stderr %q, want %d and the deadline", code, stderr.String(), ExitWrapper)
	}
	recs := readRecords(t, log)
	if events(recs) != "start,lock_lost,end" || recs[1].Reason != LostUnreachable || recs[2].Reason != "lock_lost" {
		t.Errorf("records %+v, want start, lock_lost (unreachable), end for lock_lost", recs)
	}
}
