package wrapper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirMode is the mode of the directories makeParents creates, whatever the
// umask: the exporter, often another user, must reach the run log.
const dirMode = 0o755

// makeParents creates the missing parent directories of path (what, "run
// log" or "lock file", names it in errors), so that the README's crontab
// line works on a fresh host. Directories that exist are used as they are,
// symlinks to them included (/var/run → /run); the ones it creates are
// created one at a time with mkdirat(2) and opened with O_NOFOLLOW before
// the next is created in them: a symlink planted as the name of one of them
// is refused, never followed. They are owned by the user running the
// wrapper and get mode 0755.
func makeParents(what, path string) error {
	dir := filepath.Dir(filepath.Clean(path))
	// The deepest ancestor that exists (stat follows symlinks: it is not
	// ours to judge), and the names missing below it.
	base, missing := dir, []string(nil)
	for {
		if _, err := os.Stat(base); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s directory: %w", what, err)
		}
		parent := filepath.Dir(base)
		if parent == base {
			return fmt.Errorf("%s directory %s: no existing ancestor", what, dir)
		}
		missing = append([]string{filepath.Base(base)}, missing...)
		base = parent
	}
	if len(missing) == 0 {
		return nil
	}
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s directory %s: %w", what, base, err)
	}
	cur := base
	for _, name := range missing {
		cur = filepath.Join(cur, name)
		created := true
		if err := unix.Mkdirat(fd, name, dirMode); err != nil {
			if !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return fmt.Errorf("creating %s directory %s: %w", what, cur, err)
			}
			created = false // made meanwhile by another wrapper, or planted
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				var st unix.Stat_t
				if unix.Lstat(cur, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return fmt.Errorf("%s directory %s is a symlink; refusing to follow it", what, cur)
				}
				return fmt.Errorf("%s directory %s is not a directory", what, cur)
			}
			return fmt.Errorf("creating %s directory %s: %w", what, cur, err)
		}
		fd = next
		if created {
			// Exactly 0755, whatever the umask.
			if err := unix.Fchmod(fd, dirMode); err != nil {
				unix.Close(fd)
				return fmt.Errorf("creating %s directory %s: %w", what, cur, err)
			}
		}
	}
	unix.Close(fd)
	return nil
}
