package locks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// waitFor probes until cond holds, failing the test after a generous bound:
// it waits for the kernel to show what a started process did, not for a
// guessed sleep.
func waitFor(t *testing.T, what string, p fileProber, cond func(State) bool) State {
	t.Helper()
	var st State
	testproc.Eventually(t, 30*time.Second, what, func() error {
		var err error
		if st, err = p.probe(time.Now()); err != nil {
			t.Fatalf("%s: probe: %v", what, err)
		}
		if !cond(st) {
			return fmt.Errorf("last state %+v", st)
		}
		return nil
	})
	return st
}

func needFlock(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Fatal("flock(1) is missing: install the Debian package util-linux")
	}
	return bin
}

// startGroup starts a command in its own process group, killed at cleanup.
func startGroup(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

func TestFlockHeldByProcess(t *testing.T) {
	bin := needFlock(t)
	path := filepath.Join(t.TempDir(), "stats.lock")
	p := newFlock(path)

	st := waitFor(t, "no file", p, func(State) bool { return true })
	if st.Held {
		t.Fatalf("a missing lock file is held: %+v", st)
	}
	cmd := startGroup(t, bin, "-n", path, "sleep", "30")
	st = waitFor(t, "flock takes the lock", p, func(s State) bool { return s.Held })
	if want := "pid " + strconv.Itoa(cmd.Process.Pid); st.Holder != want || st.Alive != HolderAlive {
		t.Errorf("holder %q alive %v, want %q alive", st.Holder, st.Alive, want)
	}
	if st.HeldSince.IsZero() || time.Since(st.HeldSince) > time.Minute {
		t.Errorf("held since %v, want the holder's start", st.HeldSince)
	}

	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	st = waitFor(t, "lock released", p, func(s State) bool { return !s.Held })
	if st.Holder != "" || st.Alive != HolderUnknown {
		t.Errorf("released lock still names a holder: %+v", st)
	}
}

// A job that exits leaving a background child keeps its flock lock alive in
// the child: the probe names the child, not the dead locker.
func TestFlockHeldByGrandchild(t *testing.T) {
	bin := needFlock(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "cleanup.lock")
	pidFile := filepath.Join(dir, "child.pid")
	cmd := exec.Command(bin, "-n", path, "sh", "-c", `sleep 30 </dev/null >/dev/null 2>&1 & echo $! > "$0"`, pidFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flock: %v\n%s", err, out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	st := waitFor(t, "lock held by the grandchild", newFlock(path), func(s State) bool { return s.Held })
	if want := "pid " + strconv.Itoa(child); st.Holder != want || st.Alive != HolderAlive {
		t.Errorf("holder %q alive %v, want %q alive (the locker %d has exited)", st.Holder, st.Alive, want, cmd.Process.Pid)
	}
}

// exitedPID returns the PID of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestPIDFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-3 * time.Hour)
	self := os.Getpid()
	dead := exitedPID(t)
	write := func(name, content string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mkdir := filepath.Join(dir, "mkdir.lock")
	if err := os.Mkdir(mkdir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.lock")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(write("target", "1", now), link); err != nil {
		t.Fatal(err)
	}
	// This process started before the file was written.
	selfFile := write("self.lock", strconv.Itoa(self)+"\n", now)

	for _, tc := range []struct {
		name       string
		path       string
		staleAfter time.Duration
		started    time.Time // of every live PID; zero: unknown
		want       State
		wantErr    string
	}{
		{name: "missing", path: filepath.Join(dir, "none.lock"), want: State{}},
		{name: "live pid", path: selfFile, want: State{Held: true, Holder: "pid " + strconv.Itoa(self), Alive: HolderAlive, HeldSince: now}},
		{name: "pid in json", path: write("json.lock", `{"pid": `+strconv.Itoa(self)+`, "host": "web1"}`, now),
			want: State{Held: true, Holder: "pid " + strconv.Itoa(self), Alive: HolderAlive, HeldSince: now}},
		{name: "pid after text", path: write("text.lock", "locked by pid "+strconv.Itoa(dead)+" at 12:00", old),
			wantErr: "lock file " + filepath.Join(dir, "text.lock") + ": not a PID file"},
		{name: "digit in html", path: write("html.lock", "<h1>4242</h1>\n", old),
			wantErr: "lock file " + filepath.Join(dir, "html.lock") + ": not a PID file"},
		{name: "longer than a PID file", path: write("long.lock", strings.Repeat(" ", maxPIDFile)+"1", old),
			wantErr: "longer than 4096 bytes"},
		{name: "pid with surrounding whitespace", path: write("spaces.lock", "\n  "+strconv.Itoa(dead)+" \n", old),
			want: State{Held: true, Holder: "pid " + strconv.Itoa(dead), Alive: HolderDead, HeldSince: old}},
		{name: "dead pid", path: write("dead.lock", strconv.Itoa(dead), old),
			want: State{Held: true, Holder: "pid " + strconv.Itoa(dead), Alive: HolderDead, HeldSince: old}},
		{name: "pid reused by a younger process", path: write("reused.lock", strconv.Itoa(self), old), started: old.Add(time.Hour),
			want: State{Held: true, Holder: "pid " + strconv.Itoa(self), Alive: HolderDead, HeldSince: old}},
		{name: "no pid, young", path: write("young.lock", "", now), staleAfter: 2 * time.Hour,
			want: State{Held: true, HeldSince: now}},
		{name: "no pid, older than stale_after", path: write("stale.lock", "", old), staleAfter: 2 * time.Hour,
			want: State{Held: true, Alive: HolderDead, HeldSince: old}},
		{name: "no pid, no stale_after", path: write("plain.lock", "\n", old),
			want: State{Held: true, HeldSince: old}},
		{name: "json without pid", path: write("nopid.json", `{"host":"web1"}`, old),
			want: State{Held: true, HeldSince: old}},
		{name: "json with a pid that is none", path: write("badpid.json", `{"host":"web1","pid":"x"}`, old),
			wantErr: `badpid.json: "pid": not a PID file`},
		{name: "mkdir lock", path: mkdir, staleAfter: time.Hour, want: State{Held: true}},
		{name: "fifo", path: fifo, wantErr: "not a regular file"},
		{name: "symlink", path: link, wantErr: "symlink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPIDFile(tc.path, tc.staleAfter).(pidfileProbe)
			if !tc.started.IsZero() {
				p.started = func(int) time.Time { return tc.started }
			}
			done := make(chan struct{})
			var st State
			var err error
			go func() {
				defer close(done)
				st, err = p.probe(now)
			}()
			testproc.Receive(t, done, 30*time.Second, "the probe, which blocks")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Kind = kindPIDFile
			if tc.path == mkdir {
				tc.want.HeldSince = st.HeldSince // the directory's own mtime
			}
			if !st.HeldSince.Equal(tc.want.HeldSince) {
				t.Errorf("held since %v, want %v", st.HeldSince, tc.want.HeldSince)
			}
			st.HeldSince, tc.want.HeldSince = time.Time{}, time.Time{}
			if st != tc.want {
				t.Errorf("got  %+v\nwant %+v", st, tc.want)
			}
		})
	}
}

// A PID file holds a PID, a JSON object with "pid", or nothing; any other
// content is an error, never a number picked out of text.
func TestParsePID(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr string // "": none
	}{
		{in: "4242", want: 4242},
		{in: "4242\n", want: 4242},
		{in: " \t4242\r\n\n", want: 4242},
		{in: "004242", want: 4242},
		{in: `{"pid":99}`, want: 99},
		{in: ` {"pid":"99","host":"web1"}` + "\n", want: 99},
		{in: `{"host":"a"}`},
		{in: `{"pid":null}`},
		{in: ""},
		{in: " \n\t"},
		{in: "<h1>4242</h1>", wantErr: "not a PID file"},
		{in: "<html><body><h1>1</h1>", wantErr: "not a PID file"},
		{in: "  pid=17 started", wantErr: "not a PID file"},
		{in: "locked by pid 4242 at 12:00", wantErr: "not a PID file"},
		{in: "4242 4243", wantErr: "not a PID file"},
		{in: "4242\nweb1\n", wantErr: "not a PID file"},
		{in: "+4242", wantErr: "not a PID file"},
		{in: "-1", wantErr: "not a PID file"},
		{in: "0x10", wantErr: "not a PID file"},
		{in: "busy", wantErr: "not a PID file"},
		{in: "0", wantErr: "out of the range"},
		{in: "99999999999999999999", wantErr: "out of the range"},
		{in: "4194305", wantErr: "out of the range"}, // above PID_MAX_LIMIT
		{in: `{"pid":-1}`, wantErr: `"pid": not a PID file`},
		{in: `{"pid":"x"}`, wantErr: `"pid": not a PID file`},
		{in: `{"pid":4.2e3}`, wantErr: `"pid": not a PID file`},
		{in: `{"pid":1} trailing`, wantErr: "invalid JSON"},
		{in: `{"pid":`, wantErr: "invalid JSON"},
		{in: `[4242]`, wantErr: "not a PID file"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parsePID([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != 0 {
					t.Fatalf("parsePID(%q) = %d, %v; want 0 and an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parsePID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

// parsePID never panics, errs with PID 0, and reads a PID only from a file
// that, trimmed, is that PID's digits or a JSON object.
func FuzzParsePID(f *testing.F) {
	for _, s := range []string{"4242", `{"pid":1}`, "x 12 y", `{"pid":`, "", "<h1>4242</h1>", " 17\n", `{"pid":"3"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, err := parsePID(b)
		if pid < 0 || pid > maxPID || (err != nil && pid != 0) {
			t.Fatalf("parsePID(%q) = %d, %v", b, pid, err)
		}
		trimmed := strings.TrimSpace(string(b))
		if pid > 0 && !strings.HasPrefix(trimmed, "{") && strings.TrimLeft(trimmed, "0") != strconv.Itoa(pid) {
			t.Fatalf("parsePID(%q) = %d: a number picked out of text", b, pid)
		}
	})
}

var _ = context.Background
