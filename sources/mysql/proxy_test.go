package mysql

import (
	"io"
	"net"
	"sync"
	"testing"
)

// cutProxy forwards TCP connections to a server until cut: then it stops
// forwarding in both directions without closing anything, as a network cut
// (not a refused connection) looks to a client, and holds new connections
// unanswered. Restore forwards again, for new connections.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	held  chan struct{} // closed on restore: held connections may proceed
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, held: make(chan struct{})}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		cut, held := p.cut, p.held
		p.mu.Unlock()
		go func() {
			if cut {
				<-held // silent until restored, then dropped: the client gave up
				c.Close()
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, s)
			p.mu.Unlock()
			go p.pipe(s, c)
			p.pipe(c, s)
		}()
	}
}

// pipe copies while not cut; once cut, data is swallowed.
func (p *cutProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			p.mu.Unlock()
			if !cut {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

// Cut stops all traffic; connections already open are never served again.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// Restore forwards new connections again.
func (p *cutProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	close(p.held)
	p.held = make(chan struct{})
}
