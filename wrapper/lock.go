package wrapper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

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

// lockHolder returns the pid of the process holding the flock(2) lock on f,
// or 0 when it cannot be found. /proc/locks names the process that took the
// lock: for a lock taken by jobwatch run, the wrapper, which then passes it to
// its job. So:
//   - a live locker with a child that leads its own process group and has
//     the lock file open is a wrapper and its job: the job is the holder
//     (a wrapper that has not started its job yet gets a moment to do so);
//   - a live locker otherwise (any other program) is the holder;
//   - a dead locker (a wrapper killed by SIGKILL) left the lock to its job,
//     which is found among group leaders holding the lock file open, other
//     than jobwatch processes (this one, other skipping wrappers).
//
// Reading other users' /proc/PID/fd needs privileges; without them the
// locker's pid, or 0, is the answer.
func lockHolder(f *os.File) int {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	locker := findFlockHolder(locks, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	locks.Close()
	if locker == 0 {
		return 0
	}
	holds := func(pid int) bool { return holdsFile(pid, st.Dev, st.Ino) }
	if ls, ok := readStat(locker); ok && ls.live() {
		// Another jobwatch run may have taken the lock and not started its
		// job yet: give it a moment.
		deadline := time.Now().Add(holderWait)
		wrapper := sameExecutable(locker)
		for {
			for _, pid := range pids() {
				if ps, ok := readStat(pid); ok && ps.ppid == locker && ps.pgrp == pid && ps.live() && holds(pid) {
					return pid
				}
			}
			if !wrapper || time.Now().After(deadline) {
				return locker
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	self := os.Getpid()
	for _, pid := range pids() {
		if ps, ok := readStat(pid); ok && pid != self && ps.pgrp == pid && ps.live() && holds(pid) && !sameExecutable(pid) {
			return pid
		}
	}
	return 0
}

// holderWait bounds how long a skipping run waits for a wrapper that holds
// the lock to start its job.
const holderWait = 500 * time.Millisecond

// holdsFile reports whether process pid has the file dev:ino open.
func holdsFile(pid int, dev, ino uint64) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	for _, n := range names {
		if unix.Stat(dir+n, &st) == nil && st.Dev == dev && st.Ino == ino {
			return true
		}
	}
	return false
}

// sameExecutable reports whether process pid runs this binary (another
// jobwatch run).
func sameExecutable(pid int) bool {
	a, err1 := os.Stat("/proc/self/exe")
	b, err2 := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err1 == nil && err2 == nil && os.SameFile(a, b)
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
