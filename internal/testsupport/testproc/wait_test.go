package testproc

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	WaitUntil(t, 10*time.Second, "three looks", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("looked %d times, want 3", n)
	}
}

func TestWithin(t *testing.T) {
	ch := make(chan int, 1)
	if _, ok := Within(ch, time.Millisecond); ok {
		t.Error("Within reported a value on an empty channel")
	}
	ch <- 7
	if v, ok := Within(ch, 10*time.Second); !ok || v != 7 {
		t.Errorf("Within = %v, %v; want 7, true", v, ok)
	}
	done := make(chan struct{})
	close(done)
	if _, ok := Within(done, 10*time.Second); !ok {
		t.Error("Within did not take a closed channel")
	}
}

// A shell's child is seen once it has exec'd, with its open files.
func TestHasChildAndOpenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	WriteFile(t, path, "")
	cmd := exec.Command("sh", "-c", `exec 3<"$1"; sleep 60; :`, "sh", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	WaitUntil(t, 10*time.Second, "sh to start sleep", func() bool { return HasChild(cmd.Process.Pid, "sleep") })
	if !HoldsOpen(cmd.Process.Pid, path) {
		t.Errorf("sh does not hold %s open: %q", path, OpenFiles(cmd.Process.Pid))
	}
}
