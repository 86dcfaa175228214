package testproc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/procfs"
)

// maxPoll is the longest pause between two looks of Eventually: it starts
// at a millisecond and doubles up to this, so that a condition met at once
// is seen at once, and one that takes seconds (a scrape of 10,000 jobs, a
// server starting) is not looked at hundreds of times a second.
const maxPoll = 50 * time.Millisecond

// Eventually calls check until it returns nil and fails the test, with what
// and the last error check returned, when it has not within timeout. It is
// the one place tests poll: the timeout is only a bound for a broken
// program (generous, so that a loaded machine is never taken for one), and
// the wait ends as soon as check sees what it waits for. A check that sees
// waiting is pointless (the server it waits for exited) may call t.Fatal.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, 0, what, check)
}

// EventuallyEvery is Eventually looking every so often, for a check that
// costs (a scrape of 10,000 jobs); every 0 is Eventually's pace.
func EventuallyEvery(t testing.TB, timeout, every time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if err == errNotYet {
				t.Fatalf("timed out after %s waiting for %s", timeout, what)
			}
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		if every > 0 {
			pause = every
		}
		time.Sleep(pause) // paces the looks; the deadline above is what bounds the wait
		pause = min(2*pause, maxPoll)
	}
}

// WaitUntil is Eventually for a condition that says only yes or no.
func WaitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

var errNotYet = errors.New("not yet")

// Within receives from ch, waiting at most d; ok is false when nothing came
// (a closed channel counts as something). It is for deadlines, which a
// working program never reaches; a test that checks that nothing comes
// during a window waits that window where it can be seen (a sleep or a
// timer in the test itself, with a comment saying so).
func Within[T any](ch <-chan T, d time.Duration) (v T, ok bool) {
	select {
	case v = <-ch:
		return v, true
	case <-time.After(d): // a deadline for a broken program, not a pause
		return v, false
	}
}

// Receive receives from ch and fails the test, naming what it waited for,
// when nothing came within d.
func Receive[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	v, ok := Within(ch, d)
	if !ok {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
	return v
}

// Children lists the live processes whose parent is pid.
func Children(pid int) []int {
	var out []int
	for _, p := range procfs.Pids() {
		if st, ok := procfs.ReadStat(p); ok && st.PPID == pid && st.Live() {
			out = append(out, p)
		}
	}
	return out
}

// Comm is the command name of process pid (/proc/PID/comm), "" when it is
// gone.
func Comm(pid int) string {
	b, err := os.ReadFile(procfs.Root + "/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// HasChild reports whether process pid has a live child running comm (its
// command name: a child forked but not yet exec'd has its parent's).
func HasChild(pid int, comm string) bool {
	for _, c := range Children(pid) {
		if Comm(c) == comm {
			return true
		}
	}
	return false
}

// OpenFiles lists what the file descriptors of process pid point to (the
// targets of /proc/PID/fd/*: paths, "anon_inode:inotify", "socket:[...]").
func OpenFiles(pid int) []string {
	dir := procfs.Root + "/" + strconv.Itoa(pid) + "/fd/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if target, err := os.Readlink(dir + e.Name()); err == nil {
			out = append(out, target)
		}
	}
	return out
}

// HoldsOpen reports whether process pid has a file descriptor on target
// (as OpenFiles shows it).
func HoldsOpen(pid int, target string) bool {
	for _, f := range OpenFiles(pid) {
		if f == target {
			return true
		}
	}
	return false
}
