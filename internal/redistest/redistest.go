// Package redistest starts a throwaway redis-server for tests: a free
// loopback port, a directory in t.TempDir(), no persistence, and the server
// killed in t.Cleanup. It can be stopped and started again on the same port,
// which, without persistence, is a restart that loses every key.
package redistest

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server the test may use.
type Server struct {
	t        testing.TB
	port     int
	password string
	args     []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// Start starts a server, with password required when it is not empty, and
// registers its shutdown with t.Cleanup. It fails the test, naming the
// Debian package, when redis-server is missing.
func Start(t testing.TB, password string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: install the Debian package redis-server")
	}
	s := &Server{t: t, port: freePort(t), password: password}
	s.args = []string{bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--logfile", ""}
	if password != "" {
		s.args = append(s.args, "--requirepass", password)
	}
	t.Cleanup(s.kill)
	s.Restart()
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a redis:// URL of the server, with the password.
func (s *Server) URL() string {
	if s.password != "" {
		return "redis://:" + s.password + "@" + s.Addr() + "/0"
	}
	return "redis://" + s.Addr() + "/0"
}

// Client returns a client of the server, closed in t.Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// Restart starts the server (again, on the same port) and waits until it
// answers PING.
func (s *Server) Restart() {
	t := s.t
	t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		t.Fatal("redistest: server already running")
	}
	cmd := exec.Command(s.args[0], s.args[1:]...)
	s.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		t.Fatalf("starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, Protocol: 2, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			t.Fatalf("redis-server exited: %s", s.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server not ready after 30s: %v\n%s", err, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM; without persistence nothing is saved)
// and waits until it has exited.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill is the t.Cleanup: the server must not outlive the test.
func (s *Server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}
