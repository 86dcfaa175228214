package locks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"jobwatch/internal/procfs"
)

// flockProbe looks at a flock(2) lock file: whether the kernel lists a lock
// on its inode in /proc/locks, and which live process holds it. It never
// tries to take the lock.
type flockProbe struct{ path string }

func (p flockProbe) probe(time.Time) (State, error) {
	st := State{Kind: kindFlock}
	var fi unix.Stat_t
	if err := unix.Stat(p.path, &fi); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return st, nil // no file, no lock
		}
		return st, &fs.PathError{Op: "stat", Path: p.path, Err: err}
	}
	locks, err := procfs.LocksOn(procfs.FileIDOf(&fi))
	if err != nil {
		return st, fmt.Errorf("reading /proc/locks: %w", err)
	}
	if len(locks) == 0 {
		return st, nil
	}
	st.Held = true
	// The locker /proc/locks names is the holder while it lives and still
	// has the file open; once it has exited, the lock lives on in a child
	// that inherited the descriptor (a forgotten background process), which
	// only a scan of every process's descriptors finds.
	holder := 0
	for _, l := range locks {
		if l.PID > 0 && procfs.Alive(l.PID) && procfs.HoldsFile(l.PID, fi.Dev, fi.Ino) {
			holder = l.PID
			break
		}
	}
	if holder == 0 {
		if hs := procfs.LockHolders(fi.Dev, fi.Ino); len(hs) > 0 {
			holder = oldestProcess(hs)
		}
	}
	if holder == 0 {
		return st, nil // held; by whom cannot be seen from here
	}
	st.Holder = "pid " + strconv.Itoa(holder)
	st.Alive = HolderAlive
	st.HeldSince = procfs.StartTime(holder)
	return st, nil
}

// oldestProcess picks, of processes sharing one lock, the one that started
// first: a job's process rather than the children it forked.
func oldestProcess(pids []int) int {
	best, bestStart := 0, time.Time{}
	for _, pid := range pids {
		s := procfs.StartTime(pid)
		if best == 0 || (!s.IsZero() && (bestStart.IsZero() || s.Before(bestStart))) {
			best, bestStart = pid, s
		}
	}
	return best
}

// maxPIDFile bounds what is read of a PID lock file.
const maxPIDFile = 4096

// pidfileProbe looks at a lock that exists as a file (or directory) while
// its job runs: created with O_EXCL, noclobber or mkdir, and left behind by
// a kill -9. It may hold the holder's PID.
type pidfileProbe struct {
	path       string
	staleAfter time.Duration
	// alive and started are procfs.Alive and procfs.StartTime; tests replace
	// them to describe processes that cannot be made on demand.
	alive   func(int) bool
	started func(int) time.Time
}

func (p pidfileProbe) probe(now time.Time) (State, error) {
	st := State{Kind: kindPIDFile}
	// Non-blocking and without following a symlink: a FIFO at the path must
	// not hang the probe, and a link must not lead it elsewhere.
	fd, err := unix.Open(p.path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return st, nil
		}
		if errors.Is(err, unix.ELOOP) {
			return st, fmt.Errorf("lock file %s is a symlink; refusing to follow it", p.path)
		}
		return st, &fs.PathError{Op: "open", Path: p.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), p.path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("lock file: %w", err)
	}
	var pid int
	switch {
	case fi.Mode().IsRegular():
		b, err := io.ReadAll(io.LimitReader(f, maxPIDFile))
		if err != nil {
			return st, fmt.Errorf("reading lock file %s: %w", p.path, err)
		}
		pid = parsePID(b)
	case fi.IsDir(): // a mkdir lock
	default:
		return st, fmt.Errorf("lock file %s is not a regular file or directory (%s)", p.path, fi.Mode().Type())
	}
	st.Held = true
	st.HeldSince = fi.ModTime()
	if pid <= 0 {
		if p.staleAfter > 0 && now.Sub(fi.ModTime()) > p.staleAfter {
			st.Alive = HolderDead
		}
		return st, nil
	}
	st.Holder = "pid " + strconv.Itoa(pid)
	st.Alive = HolderDead
	if p.alive(pid) {
		// A process that started after the file was last written cannot
		// have written it: the PID was reused.
		if s := p.started(pid); s.IsZero() || !s.After(fi.ModTime().Add(time.Second)) {
			st.Alive = HolderAlive
		}
	}
	return st, nil
}

// parsePID finds the holder's PID in a lock file: a JSON object's "pid",
// else the first decimal integer. 0: none.
func parsePID(b []byte) int {
	// A JSON object names the PID in "pid" (a number or a numeric string),
	// or not at all.
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		var v struct {
			PID json.RawMessage `json:"pid"`
		}
		if json.Unmarshal(t, &v) != nil {
			return 0
		}
		n, err := strconv.Atoi(string(bytes.Trim(v.PID, `"`)))
		if err != nil || n <= 0 || n > maxPID {
			return 0
		}
		return n
	}
	for i := 0; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			continue
		}
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(string(b[i:j]))
		if err != nil || n <= 0 || n > maxPID {
			return 0
		}
		return n
	}
	return 0
}

// maxPID is Linux's largest PID (PID_MAX_LIMIT).
const maxPID = 1 << 22
