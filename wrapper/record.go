package wrapper

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timeLayout is RFC 3339 with milliseconds; times are written in UTC, so the
// zone is always "Z".
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// The record shapes. Field order is the order the keys are written in;
// the exporter's runlog source reads them.
type startRecord struct {
	Time  string `json:"time"`
	Job   string `json:"job"`
	Event string `json:"event"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	RunID string `json:"run_id"`
	// Lock is "file" while the run holds its --lock file: no earlier run
	// on this host is still going (it would hold it), which the model
	// reads to end such a run that never wrote its end.
	Lock string `json:"lock,omitempty"`
	// LockTTL is the Redis lease in seconds, while one is held: jobwatch
	// advise compares it with the run's durations.
	LockTTL float64 `json:"lock_ttl_seconds,omitempty"`
}

type endRecord struct {
	Time     string  `json:"time"`
	Job      string  `json:"job"`
	Event    string  `json:"event"`
	Host     string  `json:"host"`
	PID      int     `json:"pid"`
	RunID    string  `json:"run_id"`
	Status   string  `json:"status"`
	ExitCode int     `json:"exit_code"`
	Duration float64 `json:"duration_seconds"`
	Reason   string  `json:"reason,omitempty"` // lock_lost, lock_unavailable; status skipped: a skip reason
}

type skipRecord struct {
	Time      string `json:"time"`
	Job       string `json:"job"`
	Event     string `json:"event"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	Reason    string `json:"reason"`               // locked, lock_unavailable
	Lock      string `json:"lock"`                 // the layer that refused: file, redis, mysql
	HolderPID int    `json:"holder_pid,omitempty"` // file: the process holding the lock
	Holder    string `json:"holder,omitempty"`     // who holds it, when known
}

// lockLostRecord is written the moment a shared lock is found lost while
// the job runs.
type lockLostRecord struct {
	Time   string `json:"time"`
	Job    string `json:"job"`
	Event  string `json:"event"`
	Host   string `json:"host"`
	PID    int    `json:"pid"`
	RunID  string `json:"run_id"`
	Lock   string `json:"lock"`             // redis, mysql
	Reason string `json:"reason"`           // key_gone, key_taken, unreachable, connection_lost, not_owner
	Holder string `json:"holder,omitempty"` // the new holder, when known
}

// Statuses of an end record.
const (
	statusSuccess = "success"
	statusFailure = "failure"
	statusTimeout = "timeout"
	// StatusSkipped is a skip's status in the job_runs table, and the end
	// record's of a run that declined to run (--skipped-exit,
	// --skipped-output).
	StatusSkipped = "skipped"
)

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// seconds rounds d to milliseconds, as a number of seconds.
func seconds(d time.Duration) float64 {
	if d < 0 {
		d = 0
	}
	return math.Round(d.Seconds()*1000) / 1000
}

// newRunID returns 16 random hex characters.
func newRunID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; fall back to the clock anyway.
		return fmt.Sprintf("%016x", uint64(time.Now().UnixNano()))
	}
	return hex.EncodeToString(b[:])
}

// NoLog as --log writes no run log (with --record-mysql: the table only).
const NoLog = "-"

// runLog appends records to one file. The file is opened for each record, so
// a log rotated while a job runs receives the end record in its new file.
type runLog struct {
	path   string
	failed error // the first write that failed, if any
}

// write appends rec as one line with a single write(2) on an O_APPEND file:
// records of concurrent wrappers never interleave.
func (l *runLog) write(rec any) error {
	if l.path == NoLog {
		return nil
	}
	line, err := marshalRecord(rec)
	if err != nil {
		return l.fail(fmt.Errorf("encoding run record: %w", err))
	}
	line = append(line, '\n')
	f, err := openLog(l.path)
	if err != nil {
		return l.fail(err)
	}
	n, err := f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != len(line) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(line))
	}
	if err != nil {
		return l.fail(fmt.Errorf("run log %s: %w", l.path, err))
	}
	return nil
}

// openLog opens the run log for appending, creating it (mode 0640 less the
// umask) if missing, and its missing parent directories (makeParents). As for the lock file, a symlink is refused (O_NOFOLLOW):
// in a group-writable log directory another user could otherwise point the
// log at any file the job's user may write, or create one through a dangling
// link. Anything but a regular file (a FIFO, a socket, a device) is refused
// too; O_NONBLOCK keeps a FIFO from blocking the open. os.OpenFile adds
// O_CLOEXEC: the job never inherits the log.
func openLog(path string) (*os.File, error) {
	open := func() (*os.File, error) {
		return os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o640)
	}
	f, err := open()
	if errors.Is(err, unix.ENOENT) {
		if err := makeParents("run log", path); err != nil {
			return nil, err
		}
		f, err = open()
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("run log %s is a symlink; refusing to follow it", path)
		}
		if errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("run log %s is not a regular file", path) // a FIFO nobody reads
		}
		return nil, fmt.Errorf("run log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("run log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("run log %s is not a regular file", path)
	}
	return f, nil
}

func (l *runLog) fail(err error) error {
	if l.failed == nil {
		l.failed = err
	}
	return err
}
