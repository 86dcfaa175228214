package wrapper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/procfs"
)

// openLock opens (creating if missing, mode 0644 less the umask, and its
// missing parent directories: makeParents) the lock file without following
// a symlink. The file is never truncated or deleted:
// every wrapper must lock the same inode. It is opened read-only, which is
// enough for flock(2) and lets users who cannot write the file still share it.
func openLock(path string) (*os.File, error) {
	open := func() (*os.File, error) { return os.OpenFile(path, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o644) }
	f, err := open()
	if errors.Is(err, unix.ENOENT) {
		if err := makeParents("lock file", path); err != nil {
			return nil, err
		}
		f, err = open()
	}
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
//     (a wrapper that has not started its job yet is waited for, up to
//     holderWait, looking again at its children until then);
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
	return findHolder(procView{
		locker: func() int {
			locks, err := os.Open("/proc/locks")
			if err != nil {
				return 0
			}
			defer locks.Close()
			return findFlockHolder(locks, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
		},
		children:  children,
		pids:      pids,
		stat:      readStat,
		holds:     func(pid int) bool { return holdsFile(pid, st.Dev, st.Ino) },
		isWrapper: sameExecutable,
		now:       time.Now,
		sleep:     time.Sleep,
	}, os.Getpid())
}

// holderWait bounds how long a skipping run waits for a wrapper that holds
// the lock to start its job; holderPoll is how often it looks meanwhile.
// The wait ends as soon as the job exists, or the wrapper exits or lets the
// lock go, so it is only ever reached by a wrapper stopped or starved
// between taking the lock and starting its job.
const (
	holderWait = 5 * time.Second
	holderPoll = 10 * time.Millisecond
)

// procView is what the holder lookup reads of the process table; tests
// give it a process table of their own and a fake clock.
type procView struct {
	locker    func() int                     // the lock's holder in /proc/locks, 0: none
	children  func(pid int) ([]int, bool)    // pid's children; false: not known this way
	pids      func() []int                   // every process
	stat      func(pid int) (procStat, bool) // /proc/PID/stat
	holds     func(pid int) bool             // pid has the lock file open
	isWrapper func(pid int) bool             // pid runs this binary
	now       func() time.Time
	sleep     func(time.Duration)
}

func findHolder(v procView, self int) int {
	locker := v.locker()
	if locker == 0 {
		return 0
	}
	if ls, ok := v.stat(locker); ok && ls.live() {
		if !v.isWrapper(locker) {
			return locker
		}
		// Another jobwatch run holds the lock: its job is the holder, once
		// it exists. Every pass reads the process table afresh, so a job
		// born during a pass is found by the next one, and the deadline is
		// looked at only between passes that could not find it.
		deadline := v.now().Add(holderWait)
		for {
			if job := jobOf(v, locker); job != 0 {
				return job
			}
			if v.now().After(deadline) {
				return locker
			}
			v.sleep(holderPoll)
			if l := v.locker(); l != locker {
				return l // released (0) or passed on: what /proc/locks says now
			}
			if ls, ok := v.stat(locker); !ok || !ls.live() {
				break // the wrapper died: its job holds the lock, if anyone
			}
		}
	}
	for _, pid := range v.pids() {
		if ps, ok := v.stat(pid); ok && pid != self && ps.pgrp == pid && ps.live() && v.holds(pid) && !v.isWrapper(pid) {
			return pid
		}
	}
	return 0
}

// jobOf returns the child of wrapper that leads its own process group and
// holds the lock file open (its job), or 0. It reads the wrapper's children
// from /proc/PID/task/TID/children when the kernel has them, else scans
// every process.
func jobOf(v procView, wrapper int) int {
	candidates, ok := v.children(wrapper)
	if !ok {
		candidates = v.pids()
	}
	for _, pid := range candidates {
		if ps, ok := v.stat(pid); ok && ps.ppid == wrapper && ps.pgrp == pid && ps.live() && v.holds(pid) {
			return pid
		}
	}
	return 0
}

// children lists pid's children from /proc/PID/task/*/children (kernels with
// CONFIG_PROC_CHILDREN); false when the kernel does not provide them.
func children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(dir + task.Name() + "/children")
		if err != nil {
			return nil, false
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil && c > 0 {
				out = append(out, c)
			}
		}
	}
	return out, true
}

// holdsFile reports whether process pid has the file dev:ino open.
func holdsFile(pid int, dev, ino uint64) bool { return procfs.HoldsFile(pid, dev, ino) }

// sameExecutable reports whether process pid runs this binary (another
// jobwatch run).
func sameExecutable(pid int) bool {
	a, err1 := os.Stat("/proc/self/exe")
	b, err2 := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// findFlockHolder scans /proc/locks text for the first active FLOCK lock on
// the inode (major:minor:ino) and returns its pid, or 0. Waiters and
// malformed lines are skipped (procfs.ParseLocks).
func findFlockHolder(r io.Reader, major, minor uint32, ino uint64) int {
	want := procfs.FileID{Major: major, Minor: minor, Ino: ino}
	for _, l := range procfs.ParseLocks(r) {
		if l.Type == "FLOCK" && l.PID > 0 && l.File == want {
			return l.PID
		}
	}
	return 0
}
