// Package redistest starts a throwaway redis-server for tests: a free
// loopback port, a directory in t.TempDir(), no persistence, and the server
// killed in t.Cleanup. It can be stopped and started again on the same port,
// which, without persistence, is a restart that loses every key.
package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobwatch/jobwatch/internal/testsupport/netnstest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Server is a redis-server the test may use.
type Server struct {
	t        testing.TB
	port     int
	password string
	args     []string
	host     string                                                            // the address it binds
	dial     func(ctx context.Context, network, addr string) (net.Conn, error) // the test's dialer, nil for the default

	proc testproc.Server
}

// Start starts a server, with password required when it is not empty, and
// registers its shutdown with t.Cleanup. It fails the test, naming the
// Debian package, when redis-server is missing, and skips it under go test
// -short.
func Start(t testing.TB, password string) *Server {
	t.Helper()
	return start(t, &Server{t: t, port: testproc.FreePort(t), password: password, host: "127.0.0.1"}, nil)
}

// StartOn starts a server in host's network namespace, on its address and
// the port 6379, as Start does on the loopback.
func StartOn(t testing.TB, host *netnstest.Host) *Server {
	t.Helper()
	return start(t, &Server{t: t, port: 6379, host: host.IP, dial: host.Dial}, host.Exec())
}

func start(t testing.TB, s *Server, prefix []string) *Server {
	t.Helper()
	bin := testproc.Program(t, "redis-server", "redis-server")
	password := s.password
	s.args = append(prefix, bin, "--port", strconv.Itoa(s.port), "--bind", s.host,
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--logfile", "", "--protected-mode", "no")
	if password != "" {
		s.args = append(s.args, "--requirepass", password)
	}
	t.Cleanup(s.proc.Kill)
	s.Restart()
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

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
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, Protocol: 2, Dialer: s.dial})
	t.Cleanup(func() { c.Close() })
	return c
}

// Restart starts the server (again, on the same port) and waits until it
// answers PING.
func (s *Server) Restart() {
	t := s.t
	t.Helper()
	done, err := s.proc.Start(s.args, nil)
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}

	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, Protocol: 2, MaxRetries: -1, Dialer: s.dial})
	defer c.Close()
	testproc.Eventually(t, 30*time.Second, "redis-server to answer PING", func() error {
		select {
		case <-done:
			t.Fatalf("redis-server exited: %s", s.proc.Output())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%w\n%s", err, s.proc.Output())
		}
		return nil
	})
}

// Stop stops the server (SIGTERM; without persistence nothing is saved)
// and waits until it has exited.
func (s *Server) Stop() { s.proc.Stop(syscall.SIGTERM, 30*time.Second) }

// Pause stops the server with SIGSTOP: it accepts connections (the kernel
// does) and answers nothing, as a hung server does, until Resume or the
// end of the test.
func (s *Server) Pause() {
	s.t.Helper()
	s.proc.Pause(s.t)
	s.t.Cleanup(s.Resume)
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { _ = s.proc.Signal(syscall.SIGCONT) }

// SetLarge makes key a string of size bytes starting with head (zero bytes
// after it), with SET and SETRANGE: the test process never holds the value.
func (s *Server) SetLarge(t testing.TB, key, head string, size int) {
	t.Helper()
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, key, head, 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	if err := c.SetRange(ctx, key, int64(size-1), "\x00").Err(); err != nil {
		t.Fatalf("SETRANGE %s: %v", key, err)
	}
}
