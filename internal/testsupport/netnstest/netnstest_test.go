package netnstest_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/netnstest"
	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
)

// Two hosts on a bridge reach each other, and nothing else: a cut host's
// connection attempts go unanswered (no error, a timeout), a host whose
// link is down fails at once, and both heal; everything is gone after the
// test.
func TestNet(t *testing.T) {
	netnstest.Require(t)
	var names []string
	t.Run("hosts", func(t *testing.T) {
		n := netnstest.New(t)
		srv, a := n.Host(1), n.Host(2)
		names = append(names, srv.Name, a.Name)
		rs := redistest.StartOn(t, srv)
		dial := func(timeout time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			c, err := a.Dial(ctx, "tcp", rs.Addr())
			if err == nil {
				c.Close()
			}
			return err
		}
		if err := dial(5 * time.Second); err != nil {
			t.Fatalf("host a cannot reach the server: %v", err)
		}
		// From outside: no answer (a connect alone proves nothing where a
		// transparent proxy accepts every connection, as on some CI VMs).
		if c, err := net.DialTimeout("tcp", rs.Addr(), 500*time.Millisecond); err == nil && pong(c) {
			t.Error("the server answers from outside the namespaces")
		}
		if c, err := a.Dial(context.Background(), "tcp", rs.Addr()); err != nil || !pong(c) {
			t.Errorf("the server does not answer PING from host a (%v)", err)
		}
		if err := a.Cut(); err != nil {
			t.Fatal(err)
		}
		if err := dial(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
			t.Errorf("a cut host's dial: %v, want a timeout (silence)", err)
		}
		if err := a.Heal(); err != nil {
			t.Fatal(err)
		}
		if err := dial(5 * time.Second); err != nil {
			t.Errorf("after healing: %v", err)
		}
		if err := a.Down(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := dial(5 * time.Second); err == nil || time.Since(start) > 2*time.Second {
			t.Errorf("a host with its link down: %v after %s, want an error at once", err, time.Since(start))
		}
		if err := a.Up(); err != nil {
			t.Fatal(err)
		}
	})
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, name := range names {
		if strings.Contains(string(out), name) {
			t.Errorf("namespace %s left behind", name)
		}
	}
}

// pong reports whether the Redis c is connected to answers PING; it
// closes c.
func pong(c net.Conn) bool {
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 7)
	n, _ := c.Read(b)
	return strings.HasPrefix(string(b[:n]), "+PONG")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
