package wrapper

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The README's crontab line on a fresh host: the missing directories of
// --log and --lock are created, mode 0755, owned by the wrapper's user.
func TestCreatesMissingDirectories(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log", "jobwatch", "runs.log")
	lock := filepath.Join(dir, "lib", "jobwatch", "lock", "j.lock")
	code, stderr := wrap(t, "--log", log, "--lock", lock, "--job", "j", "--", "true")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d stderr %q, want 0 and nothing", code, stderr)
	}
	if recs := readRecords(t, log); events(recs) != "start,end" {
		t.Errorf("records %+v, want start and end", recs)
	}
	if fi, err := os.Lstat(lock); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("lock file: %v, %v", fi, err)
	}
	for _, d := range []string{"log", "log/jobwatch", "lib", "lib/jobwatch", "lib/jobwatch/lock"} {
		fi, err := os.Lstat(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want a directory with mode 0755", d, fi.Mode())
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
			t.Errorf("%s: owner %d, want %d", d, uid, os.Getuid())
		}
	}
}

// Directories that exist are used as they are, a symlink to one included.
func TestFollowsExistingDirectorySymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "link", "new", "runs.log")
	code, stderr := wrap(t, "--log", log, "--job", "j", "--", "true")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d stderr %q, want 0 and nothing", code, stderr)
	}
	if recs := readRecords(t, filepath.Join(real, "new", "runs.log")); events(recs) != "start,end" {
		t.Errorf("records %+v, want start and end", recs)
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("existing directory changed: %v %v", fi.Mode(), err)
	}
}

// A symlink planted as the name of a directory the wrapper would create is
// refused, never followed: for the lock the run is recorded as failed.
func TestRefusesSymlinkAmongCreatedDirectories(t *testing.T) {
	t.Run("lock", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "runs.log")
		target := filepath.Join(dir, "target")
		if err := os.Symlink(target, filepath.Join(dir, "lock")); err != nil {
			t.Fatal(err)
		}
		lock := filepath.Join(dir, "lock", "sub", "j.lock")
		code, stderr := wrap(t, "--log", log, "--lock", lock, "--job", "j", "--", "true")
		want := "lock file directory " + filepath.Join(dir, "lock") + " is a symlink; refusing to follow it"
		if code != ExitWrapper || !strings.Contains(stderr, want) {
			t.Errorf("exit %d stderr %q, want %d and %q", code, stderr, ExitWrapper, want)
		}
		if _, err := os.Lstat(target); !os.IsNotExist(err) {
			t.Errorf("symlink target was created")
		}
		if recs := readRecords(t, log); events(recs) != "end" || recs[0].Status != "failure" {
			t.Errorf("records %+v, want one failed end", recs)
		}
	})
	t.Run("log", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		if err := os.Mkdir(filepath.Join(dir, "log"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "log", "jobwatch")); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(dir, "log", "jobwatch", "runs.log")
		code, stderr := wrap(t, "--log", log, "--job", "j", "--", "true")
		want := "run log directory " + filepath.Join(dir, "log", "jobwatch") + " is a symlink; refusing to follow it"
		if code != ExitWrapper || !strings.Contains(stderr, want) {
			t.Errorf("exit %d stderr %q, want %d and %q", code, stderr, ExitWrapper, want)
		}
		if _, err := os.Lstat(target); !os.IsNotExist(err) {
			t.Errorf("symlink target was created")
		}
	})
}
