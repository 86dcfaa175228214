// Package testproc helps tests that run the real jobwatch binary and other
// real programs: building it, free loopback addresses, collecting output.
package testproc

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BuildJobwatch builds cmd/jobwatch into dir and returns the binary's path.
func BuildJobwatch(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "jobwatch")
	out, err := exec.Command("go", "build", "-o", bin, "jobwatch/cmd/jobwatch").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
