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

	"github.com/jobwatch/jobwatch/internal/procfs"
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
		if pid, err = readPID(f); err != nil {
			return st, fmt.Errorf("lock file %s: %w", p.path, err)
		}
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

// errNotPIDFile is a lock file's content that is neither a PID nor a JSON
// object: a number is never picked out of text (a digit in "<h1>" would
// read as PID 1, which is always alive).
var errNotPIDFile = errors.New(`not a PID file: want a decimal PID (with surrounding whitespace at most), a JSON object with "pid", or nothing`)

// readPID reads a PID lock file's PID: parsePID of at most maxPIDFile
// bytes (a longer file is no PID file).
func readPID(f io.Reader) (int, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxPIDFile+1))
	if err != nil {
		return 0, fmt.Errorf("reading: %w", err)
	}
	if len(b) > maxPIDFile {
		return 0, fmt.Errorf("%w (longer than %d bytes)", errNotPIDFile, maxPIDFile)
	}
	return parsePID(b)
}

// parsePID reads the holder's PID from a lock file: a decimal PID with
// surrounding whitespace at most, or a JSON object's "pid" (a number or a
// numeric string). 0 with no error: no PID (an empty file, or an object
// without "pid"). Anything else is an error, never a guess.
func parsePID(b []byte) (int, error) {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return 0, nil
	case t[0] == '{':
		return parseJSONPID(t)
	}
	return parseDecimalPID(t)
}

// parseJSONPID reads "pid" of a JSON object; an object without it has none.
func parseJSONPID(t []byte) (int, error) {
	var v struct {
		PID json.RawMessage `json:"pid"`
	}
	if err := json.Unmarshal(t, &v); err != nil {
		return 0, fmt.Errorf("%w (invalid JSON: %w)", errNotPIDFile, err)
	}
	if v.PID == nil || string(v.PID) == "null" {
		return 0, nil
	}
	n := v.PID
	if len(n) >= 2 && n[0] == '"' && n[len(n)-1] == '"' {
		n = n[1 : len(n)-1]
	}
	pid, err := parseDecimalPID(n)
	if err != nil {
		return 0, fmt.Errorf(`"pid": %w`, err)
	}
	return pid, nil
}

// parseDecimalPID reads t as a PID: decimal digits only, 1 to maxPID.
func parseDecimalPID(t []byte) (int, error) {
	if len(t) == 0 {
		return 0, errNotPIDFile
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, errNotPIDFile
		}
	}
	n, err := strconv.Atoi(string(t))
	if err != nil || n <= 0 || n > maxPID {
		return 0, fmt.Errorf("%w (%s is out of the range of PIDs, 1 to %d)", errNotPIDFile, t, maxPID)
	}
	return n, nil
}

// maxPID is Linux's largest PID (PID_MAX_LIMIT).
const maxPID = 1 << 22
