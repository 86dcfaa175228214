// Package netnstest builds, for tests run as root, network namespaces
// joined by a bridge: hosts with addresses only inside their namespaces
// and no route out, whose links a test can cut silently or take down. Every
// name is unique to the run, and everything is removed in t.Cleanup, even
// when the test fails.
package netnstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Host is one network namespace on the bridge.
type Host struct {
	Name string // the namespace, as `ip netns` names it
	IP   string // its address on the bridge
	veth string // its link's end outside, on the bridge
	peer string // its link's end inside
	br   string
}

// Net is a bridge and the hosts on it.
type Net struct {
	t      testing.TB
	prefix string
	br     string
	subnet string
}

// Require skips the test under go test -short (it starts ip(8) and servers
// in namespaces) and when not run as root (namespaces need it; CI runs as
// root), and fails it, naming the Debian package, when ip(8) is missing.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ip(8) and network namespaces: skipped in -short, which starts no outside program")
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("ip is not installed: install the Debian package iproute2")
	}
}

// New makes a bridge, removed with everything on it in t.Cleanup.
func New(t testing.TB) *Net {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	n := &Net{t: t, prefix: "jw" + id, br: "jw" + id + "br", subnet: fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])}
	n.ip("link", "add", n.br, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", n.br).Run() })
	n.ip("link", "set", n.br, "up")
	return n
}

// ip runs ip(8) with args, failing the test on an error.
func (n *Net) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Host adds host number i (1-250) in a namespace of its own, removed in
// t.Cleanup, with its address on the bridge.
func (n *Net) Host(i int) *Host {
	n.t.Helper()
	h := &Host{Name: fmt.Sprintf("%s-%d", n.prefix, i), IP: fmt.Sprintf("%s.%d", n.subnet, i),
		veth: fmt.Sprintf("%sv%d", n.prefix, i), peer: fmt.Sprintf("%sp%d", n.prefix, i), br: n.br}
	n.ip("netns", "add", h.Name)
	n.t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", h.veth).Run()
		_ = exec.Command("ip", "netns", "del", h.Name).Run()
	})
	n.ip("link", "add", h.veth, "type", "veth", "peer", "name", h.peer)
	n.ip("link", "set", h.peer, "netns", h.Name)
	n.ip("link", "set", h.veth, "master", n.br, "up")
	n.ip("-n", h.Name, "addr", "add", h.IP+"/24", "dev", h.peer)
	n.ip("-n", h.Name, "link", "set", h.peer, "up")
	n.ip("-n", h.Name, "link", "set", "lo", "up")
	return h
}

// Exec is the command prefix that runs a program in the host's namespace
// (ip netns exec execs it: the pid is the program's).
func (h *Host) Exec() []string { return []string{"ip", "netns", "exec", h.Name} }

// Command runs name in the host's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append(append(h.Exec()[1:], name), args...)...)
}

// Cut disconnects the host silently: its link stays up, and whatever it
// sends is dropped on the bridge's side, as a switch or a firewall that
// drops would (TCP sees no error, only silence).
func (h *Host) Cut() error { return run("ip", "link", "set", h.veth, "nomaster") }

// Heal undoes Cut.
func (h *Host) Heal() error { return run("ip", "link", "set", h.veth, "master", h.br) }

// Down takes the host's own link down: its sends fail at once.
func (h *Host) Down() error { return run("ip", "-n", h.Name, "link", "set", h.peer, "down") }

// Up undoes Down.
func (h *Host) Up() error {
	if err := run("ip", "-n", h.Name, "link", "set", h.peer, "up"); err != nil {
		return err
	}
	return nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Dial connects from inside the host's namespace: the socket is made by a
// thread that has entered it, and stays there. The thread goes back to its
// own namespace before it is unlocked; it is discarded (its goroutine exits
// locked) only if it cannot. (A thread must not be discarded lightly: the
// kernel sends a child's PR_SET_PDEATHSIG when the thread that forked it
// ends, and the rigs' servers have one.)
func (h *Host) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer own.Close()
		f, err := os.Open("/run/netns/" + h.Name)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("entering %s: %w", h.Name, err)}
			return
		}
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, network, addr)
		ch <- result{c, err}
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	r := <-ch
	return r.c, r.err
}
