// Package procfs reads what jobwatch needs of Linux's /proc: processes, their
// state and start time, the files they hold open, and the file locks the
// kernel lists in /proc/locks. Both `jobwatch run` (who holds my lock?) and
// the locks source (who holds this job's lock, and is it alive?) use it.
package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Root is where proc is mounted.
const Root = "/proc"

// Stat is what jobwatch reads of /proc/PID/stat.
type Stat struct {
	State      byte
	PPID, PGRP int
	// StartTicks is the process's start time after boot, in clock ticks.
	StartTicks uint64
}

// Live reports a process that is neither a zombie (exited, not yet reaped)
// nor dead.
func (s Stat) Live() bool { return s.State != 'Z' && s.State != 'X' }

// ParseStat reads a /proc/PID/stat line: "PID (COMM) STATE PPID PGRP ...",
// where COMM may itself hold ") ". The start time is field 22.
func ParseStat(b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return Stat{}, false
	}
	s := Stat{State: f[0][0], PPID: ppid, PGRP: pgrp}
	// Fields after COMM start at 3 (state); starttime is field 22.
	if len(f) > 22-3 {
		s.StartTicks, _ = strconv.ParseUint(string(f[22-3]), 10, 64)
	}
	return s, true
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, bool) {
	b, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return ParseStat(b)
}

// Pids lists the processes in /proc, in ascending order.
func Pids() []int {
	d, err := os.Open(Root)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []int
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// Alive reports whether a process exists and is not a zombie. A process of
// another user counts (kill answers EPERM).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if st, ok := ReadStat(pid); ok {
		return st.Live()
	}
	return true // no /proc: kill's answer is all there is
}

// clockTicks is USER_HZ, which the kernel fixes at 100 on every Linux ABI
// /proc/PID/stat is read on.
const clockTicks = 100

var (
	bootOnce sync.Once
	bootTime time.Time
)

// StartTime is when process pid started (zero when unknown).
func StartTime(pid int) time.Time {
	st, ok := ReadStat(pid)
	if !ok || st.StartTicks == 0 {
		return time.Time{}
	}
	boot := BootTime()
	if boot.IsZero() {
		return time.Time{}
	}
	return boot.Add(time.Duration(st.StartTicks) * time.Second / clockTicks)
}

// BootTime is the btime line of /proc/stat (zero when unknown).
func BootTime() time.Time {
	bootOnce.Do(func() {
		f, err := os.Open(Root + "/stat")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("btime ")); ok {
				if s, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
					bootTime = time.Unix(s, 0)
				}
				return
			}
		}
	})
	return bootTime
}

// FileID names a file as the kernel does in /proc/locks.
type FileID struct {
	Major, Minor uint32
	Ino          uint64
}

// FileIDOf is the FileID of a stat result.
func FileIDOf(st *unix.Stat_t) FileID {
	return FileID{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), Ino: st.Ino}
}

// Lock is one active lock of /proc/locks.
type Lock struct {
	Type string // FLOCK, POSIX or OFDLCK
	Mode string // READ or WRITE
	// PID took the lock (for FLOCK: the process that called flock, which
	// may since have exited and left the lock to a child); -1 for OFD locks.
	PID  int
	File FileID
}

// ParseLocks reads /proc/locks text and returns the active locks; waiters
// ("1: -> FLOCK ...") and malformed lines are skipped. Lines look like
//
//	1: FLOCK  ADVISORY  WRITE 4242 fe:00:9978034 0 EOF
func ParseLocks(r io.Reader) []Lock {
	var out []Lock
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	for sc.Scan() {
		if l, ok := parseLock(sc.Bytes()); ok {
			out = append(out, l)
		}
	}
	return out
}

// parseLock reads one line: "id: TYPE KIND MODE PID MAJ:MIN:INO START END".
func parseLock(line []byte) (Lock, bool) {
	f := bytes.Fields(line)
	if len(f) < 6 || string(f[1]) == "->" {
		return Lock{}, false
	}
	pid, err := strconv.Atoi(string(f[4]))
	if err != nil || pid == 0 || pid < -1 {
		return Lock{}, false
	}
	parts := bytes.Split(f[5], []byte(":"))
	if len(parts) != 3 {
		return Lock{}, false
	}
	maj, err1 := strconv.ParseUint(string(parts[0]), 16, 32)
	min, err2 := strconv.ParseUint(string(parts[1]), 16, 32)
	ino, err3 := strconv.ParseUint(string(parts[2]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Lock{}, false
	}
	return Lock{Type: string(f[1]), Mode: string(f[3]), PID: pid, File: FileID{uint32(maj), uint32(min), ino}}, true
}

// LocksOn returns the active locks on file id, read from /proc/locks.
func LocksOn(id FileID) ([]Lock, error) {
	f, err := os.Open(Root + "/locks")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Lock
	for _, l := range ParseLocks(f) {
		if l.File == id {
			out = append(out, l)
		}
	}
	return out, nil
}

// HoldsFile reports whether process pid has the file dev:ino open.
func HoldsFile(pid int, dev, ino uint64) bool {
	return len(fdsOn(pid, dev, ino)) > 0
}

// fdsOn returns pid's file descriptors open on dev:ino.
func fdsOn(pid int, dev, ino uint64) []string {
	dir := Root + "/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []string
	var st unix.Stat_t
	for _, n := range names {
		if unix.Stat(dir+n, &st) == nil && st.Dev == dev && st.Ino == ino {
			out = append(out, n)
		}
	}
	return out
}

// LockHolders lists the live processes holding a lock on dev:ino through one
// of their file descriptors: the kernel lists, in /proc/PID/fdinfo/FD, the
// locks taken through that descriptor's open file, which a forked child
// shares. It scans every process, so callers use it only when the locker
// named by /proc/locks is gone. Without privileges, other users' processes
// are not seen.
func LockHolders(dev, ino uint64) []int {
	var out []int
	self := os.Getpid()
	for _, pid := range Pids() {
		if pid == self {
			continue
		}
		for _, fd := range fdsOn(pid, dev, ino) {
			info, err := os.ReadFile(Root + "/" + strconv.Itoa(pid) + "/fdinfo/" + fd)
			if err != nil || !bytes.Contains(info, []byte("\nlock:")) {
				continue
			}
			if st, ok := ReadStat(pid); ok && st.Live() {
				out = append(out, pid)
			}
			break
		}
	}
	return out
}
