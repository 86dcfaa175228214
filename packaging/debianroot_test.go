package packaging

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Debian root TestBootDebian boots: bookworm's minbase, with systemd as
// init, cron, what the package needs (adduser; logrotate, which it
// recommends: apt then installs it with no network) and curl to read
// jobwatch's pages from inside.
const (
	debianSuite    = "bookworm"
	debianPackages = "systemd,systemd-sysv,dbus,cron,curl,adduser,logrotate"
	// rootComplete is written last into a root being made: a root
	// without it is not used.
	rootComplete = ".jobwatch-test-complete"
)

// debianCacheDir is where made roots are kept between runs: outside the
// checkout, so that a clean clone (CI's) reuses them.
// JOBWATCH_TEST_CACHE moves it.
func debianCacheDir() string {
	if d := os.Getenv("JOBWATCH_TEST_CACHE"); d != "" {
		return d
	}
	return "/var/cache/jobwatch-test"
}

// debianMirror is the archive debootstrap reads; JOBWATCH_TEST_DEBIAN_MIRROR
// replaces it (a local mirror or proxy).
func debianMirror() string {
	if m := os.Getenv("JOBWATCH_TEST_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// debianRootName names a root by what it was made of, so that a changed
// package list makes a new root rather than reusing an old one.
func debianRootName() string {
	sum := sha256.Sum256([]byte(debianSuite + "\n" + debianPackages + "\n" + debianMirror()))
	return "debian-" + debianSuite + "-" + hex.EncodeToString(sum[:])[:12]
}

// debianRoot returns the cached Debian root, made with debootstrap when it
// is missing. It is made in a directory of its own and renamed into place
// once complete, under a lock, so that an interrupted build is never used
// (the next run removes it and starts again) and two test runs at once make
// it once. The root is only read: each container boots a copy.
func debianRoot(t *testing.T) string {
	t.Helper()
	dir := debianCacheDir()
	final := filepath.Join(dir, debianRootName())
	if complete(final) {
		return final
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("the Debian root's cache: %v", err)
	}
	unlock := lockFile(t, final+".lock")
	defer unlock()
	if complete(final) {
		return final // made by another test run while this one waited
	}
	if err := removeBuilds(final); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", final, os.Getpid())
	start := time.Now()
	if err := debootstrap(tmp); err != nil {
		os.RemoveAll(tmp)
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, rootComplete), []byte(debianPackages+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	t.Logf("made the Debian root %s in %s", final, time.Since(start).Round(time.Second))
	return final
}

func complete(root string) bool {
	_, err := os.Stat(filepath.Join(root, rootComplete))
	return err == nil
}

// removeBuilds removes what interrupted builds of final left: its
// temporary directories, and final itself when it is not complete.
func removeBuilds(final string) error {
	left, _ := filepath.Glob(final + ".tmp-*")
	if _, err := os.Lstat(final); err == nil {
		left = append(left, final)
	}
	for _, p := range left {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("removing an interrupted build of the Debian root: %w", err)
		}
	}
	return nil
}

// lockFile takes an exclusive flock on path (made if missing), waiting for
// another holder, and returns its release.
func lockFile(t *testing.T, path string) func() {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("locking %s: %v", path, err)
	}
	return func() { f.Close() }
}

// debootstrap makes a minbase root of debianSuite with debianPackages in
// dir; its output goes to dir's log beside it, shown when it fails.
func debootstrap(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	log := dir + ".log"
	defer os.Remove(log)
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	// In a PID and mount namespace of its own that die with the test
	// process (dieWithTest), so that a test killed by -timeout leaves
	// neither a dpkg writing into a directory the next run removes nor
	// the /proc and /sys debootstrap mounts in the root.
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--",
		"debootstrap", "--variant=minbase", "--include="+debianPackages, debianSuite, dir, debianMirror())
	cmd.Stdout, cmd.Stderr = f, f
	cmd.WaitDelay = 10 * time.Second
	dieWithTest(cmd)
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(log)
		return fmt.Errorf("debootstrap %s %s (from %s): %w\n%s", debianSuite, dir, debianMirror(), err, tail(string(out), 40))
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// copyRoot copies the cached root to dst (a directory that does not exist
// yet), keeping owners, modes and links: each container boots and changes
// its own copy.
func copyRoot(t *testing.T, src, dst string) {
	t.Helper()
	cmd := exec.Command("cp", "-a", "--reflink=auto", src, dst)
	dieWithTest(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("copying the Debian root: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(dst, rootComplete)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// dieWithTest makes cmd's process get SIGKILL when the test process dies,
// as it does when go test's -timeout panics, which runs no cleanup.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
