package wrapper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openLock opens (creating if missing, mode 0644 less the umask) the lock
// file without following a symlink. The file is never truncated or deleted:
// every wrapper must lock the same inode. It is opened read-only, which is
// enough for flock(2) and lets users who cannot write the file still share it.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("lock file %s is a symlink; refusing to follow it", path)
		}
		return nil, fmt.Errorf("lock file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("lock file %s is not a regular file", path)
	}
	return f, nil
}

// lockHolder returns the pid holding a flock(2) lock on f's inode, as
// /proc/locks shows it, or 0 when it cannot be found. jobwatch run takes the
// lock in the job's own process, so this is the job's pid.
func lockHolder(f *os.File) int {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	return findFlockHolder(locks, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// findFlockHolder scans /proc/locks text for the first active FLOCK lock on
// the inode (major:minor:ino) and returns its pid, or 0. Lines look like
//
//	1: FLOCK  ADVISORY  WRITE 4242 fe:00:9978034 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 4300 fe:00:9978034 0 EOF   (a waiter: skipped)
//
// Malformed lines are skipped.
func findFlockHolder(r io.Reader, major, minor uint32, ino uint64) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		// id: TYPE KIND MODE PID MAJ:MIN:INO START END
		if len(f) < 6 || string(f[1]) != "FLOCK" {
			continue
		}
		pid, err := strconv.Atoi(string(f[4]))
		if err != nil || pid <= 0 {
			continue
		}
		parts := bytes.Split(f[5], []byte(":"))
		if len(parts) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(string(parts[0]), 16, 32)
		min, err2 := strconv.ParseUint(string(parts[1]), 16, 32)
		in, err3 := strconv.ParseUint(string(parts[2]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if uint32(maj) == major && uint32(min) == minor && in == ino {
			return pid
		}
	}
	return 0
}
