// Package testproc helps tests that run the real jobwatch binary and other
// real programs: building it, free loopback addresses, collecting output,
// running a server process, and waiting for what they do (wait.go): a
// condition, a value on a channel, a process's children or open files.
package testproc

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/procfs"
)

// BuildJobwatch builds cmd/jobwatch into dir and returns the binary's path.
func BuildJobwatch(t testing.TB, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the jobwatch binary: skipped in -short")
	}
	bin := filepath.Join(dir, "jobwatch")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/jobwatch/jobwatch/cmd/jobwatch").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// FreePort returns a loopback port free right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Buffer collects a process's output while a test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WriteFile writes a file or fails the test.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Server is a server process a test runs (MariaDB, Redis): started, and
// started again after a stop, with Start; stopped with Stop; killed with
// Kill, which the test's t.Cleanup must call, so that no server outlives
// its test.
type Server struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *Buffer
}

// Start starts args[0] with args[1:] (attr may be nil), keeping what it
// prints for Output. done is closed once it has exited.
func (s *Server) Start(args []string, attr *syscall.SysProcAttr) (done <-chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil, errors.New("server already running")
	}
	cmd := exec.Command(args[0], args[1:]...)
	s.out = &Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := make(chan struct{})
	go func() { cmd.Wait(); close(d) }()
	s.cmd, s.done = cmd, d
	return d, nil
}

// Output is what the server printed since it last started.
func (s *Server) Output() string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		return ""
	}
	return out.String()
}

// Stop sends sig and waits until the server has exited, killing it when it
// has not after grace.
func (s *Server) Stop(sig syscall.Signal, grace time.Duration) {
	cmd, done := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if _, ok := Within(done, grace); !ok {
		_ = cmd.Process.Kill()
		<-done
	}
}

// Signal sends sig to the running server (SIGSTOP, SIGCONT: a hung
// server); it is an error when none runs.
func (s *Server) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("server not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Pause stops the running server (SIGSTOP) and returns once every one of
// its threads is stopped: the signal is delivered after kill returns, and
// a thread still running could answer a request sent meanwhile.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		t.Fatal("pausing a server that is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP to %s: %v", cmd.Path, err)
	}
	WaitUntil(t, time.Minute, "every thread of "+cmd.Path+" stopped", func() bool { return allStopped(cmd.Process.Pid) })
}

// allStopped reports whether every thread of process pid is stopped.
func allStopped(pid int) bool {
	dir := procfs.Root + "/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + task.Name() + "/stat")
		if err != nil {
			return false
		}
		if st, ok := procfs.ParseStat(b); !ok || st.State != 'T' && st.State != 't' {
			return false
		}
	}
	return true
}

// Kill kills the server and waits until it has exited.
func (s *Server) Kill() {
	if cmd, done := s.take(); cmd != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// take forgets the running process, so that it is stopped once.
func (s *Server) take() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	return cmd, done
}
