// Package chromiumtest drives a headless Chromium (Debian's chromium,
// which scripts/test.sh installs) through the DevTools protocol, for tests
// that check a page as a browser lays it out: its width at a phone's size,
// what a dark scheme renders, screenshots. One browser, one page, one
// WebSocket to it; the browser's process group is killed at the test's end.
package chromiumtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Find returns the path of Chromium, or "" when it is not installed.
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is a headless Chromium with one page, driven over the DevTools
// protocol.
type Browser struct {
	t    testing.TB
	conn *wsConn
	id   int
}

// callTimeout bounds one DevTools call: a loaded machine is slow, a hung
// browser must still fail the test.
const callTimeout = time.Minute

// Start starts Chromium and connects to its page; cleanup kills its process
// group. The test is skipped under go test -short and fails when Chromium
// is not installed.
func Start(t testing.TB) *Browser {
	t.Helper()
	testproc.SkipShort(t, "Chromium")
	bin := Find()
	if bin == "" {
		t.Fatal("chromium not found: install the Debian package chromium (scripts/test.sh does)")
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "--user-data-dir="+dir, "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	// Chromium writes its port and the browser's path to DevToolsActivePort
	// in the user data dir once it listens.
	var port string
	testproc.WaitUntil(t, time.Minute, "chromium writes DevToolsActivePort", func() bool {
		select {
		case <-done:
			t.Fatalf("chromium exited:\n%s", stderr.String())
		default:
		}
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port, _, _ = strings.Cut(string(b), "\n")
		return port != ""
	})
	ws := pageSocket(t, "127.0.0.1:"+port)
	conn, err := dialWS(ws)
	if err != nil {
		t.Fatalf("chromium's page: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Browser{t: t, conn: conn}
}

// pageSocket returns the WebSocket URL of the browser's page.
func pageSocket(t testing.TB, addr string) string {
	t.Helper()
	var targets []struct{ Type, WebSocketDebuggerURL string }
	testproc.WaitUntil(t, time.Minute, "chromium lists its page", func() bool {
		resp, err := http.Get("http://" + addr + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.WebSocketDebuggerURL != "" {
				return true
			}
		}
		return false
	})
	for _, tg := range targets {
		if tg.Type == "page" {
			return tg.WebSocketDebuggerURL
		}
	}
	return ""
}

// Call sends a DevTools command and returns its result; events that
// arrive meanwhile are dropped.
func (b *Browser) Call(method string, params any) (json.RawMessage, error) {
	b.id++
	msg, err := json.Marshal(map[string]any{"id": b.id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	_ = b.conn.c.SetDeadline(time.Now().Add(callTimeout))
	if err := b.conn.WriteText(msg); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		data, err := b.conn.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if r.ID != b.id {
			continue
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	}
}

func (b *Browser) must(method string, params any) json.RawMessage {
	b.t.Helper()
	r, err := b.Call(method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// View is how a page is shown: the viewport's size and the colour scheme.
type View struct {
	Width, Height int
	Dark          bool
}

func (v View) String() string {
	s := "light"
	if v.Dark {
		s = "dark"
	}
	return fmt.Sprintf("%dpx-%s", v.Width, s)
}

// Load shows url at the view's size and scheme and waits for it to have
// loaded.
func (b *Browser) Load(url string, v View) {
	b.t.Helper()
	b.must("Emulation.setDeviceMetricsOverride", map[string]any{"width": v.Width, "height": v.Height, "deviceScaleFactor": 1, "mobile": v.Width < 600})
	scheme := "light"
	if v.Dark {
		scheme = "dark"
	}
	b.must("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": scheme}}})
	b.must("Page.navigate", map[string]any{"url": url})
	testproc.WaitUntil(b.t, time.Minute, "the page loads: "+url, func() bool {
		var state string
		b.Eval(`document.readyState + " " + location.href`, &state)
		return state == "complete "+url
	})
}

// Eval evaluates a JavaScript expression in the page (DevTools may run
// script: the page's CSP binds the page's own, not the debugger's) and
// decodes its JSON value into out.
func (b *Browser) Eval(expr string, out any) {
	b.t.Helper()
	r := b.must("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(r, &res); err != nil {
		b.t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		b.t.Fatalf("evaluating %s: %v (%s)", expr, err, res.Result.Value)
	}
}

// Screenshot returns a PNG of the whole page, at most maxHeight pixels
// high.
func (b *Browser) Screenshot(maxHeight int) []byte {
	b.t.Helper()
	var size struct{ W, H float64 }
	b.Eval(`({W: document.documentElement.clientWidth, H: document.documentElement.scrollHeight})`, &size)
	r := b.must("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": size.W, "height": min(size.H, float64(maxHeight)), "scale": 1}})
	var res struct{ Data string }
	if err := json.Unmarshal(r, &res); err != nil {
		b.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

// wsConn is the client end of a WebSocket (RFC 6455), as much of it as
// DevTools needs: text messages, fragmented or not, and pings.
type wsConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialWS(rawURL string) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(callTimeout))
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		u.RequestURI(), u.Host, base64.StdEncoding.EncodeToString(key))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	return &wsConn{c: c, r: r}, nil
}

func (w *wsConn) Close() { _ = w.c.Close() }

// WriteText sends one text message in one masked frame.
func (w *wsConn) WriteText(p []byte) error { return w.writeFrame(0x1, p) }

func (w *wsConn) writeFrame(opcode byte, p []byte) error {
	hdr := []byte{0x80 | opcode}
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	body := make([]byte, len(p))
	for i := range p {
		body[i] = p[i] ^ mask[i%4]
	}
	_, err := w.c.Write(append(hdr, body...))
	return err
}

// ReadMessage returns the next text or binary message, answering pings.
func (w *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return nil, err
		}
		fin, opcode := h[0]&0x80 != 0, h[0]&0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if h[1]&0x80 != 0 || n > 256<<20 {
			return nil, errors.New("websocket: a masked or oversized frame from the server")
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.r, p); err != nil {
			return nil, err
		}
		switch opcode {
		case 0x8:
			return nil, errors.New("websocket: closed by the browser")
		case 0x9:
			if err := w.writeFrame(0xA, p); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		}
		msg = append(msg, p...)
		if fin {
			return msg, nil
		}
	}
}
