// Package state saves and loads jobwatch's state directory: the job model
// and every source's read position, in a format of its own (docs/state.md):
// a snapshot of everything, and a log of what changed since, one checksummed
// entry per save. A save appends the jobs and sources that changed, in one
// entry, so it costs what changed and is atomic across events and
// positions; when the log has grown to twice the snapshot's size, a save
// writes a new snapshot instead and starts a new log.
package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/version"
	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/model"
)

// Files of the state directory.
const (
	// SnapshotFile holds the whole state as of its generation.
	SnapshotFile = "state.snap"
	// LogFile holds the saves since the snapshot of the same generation.
	LogFile = "state.log"
	// LegacyFile is format 1's state file (jobwatch before format 2): read
	// once, and removed by the first save after it.
	LegacyFile = "state.json"
	lockFile   = "lock"
)

// Version is the format written; Load reads it and every earlier one.
// Format 3 adds what event time needs (a job's records held for its
// watermark and how far it has decided, a source's late records, when each
// save was written); a format-2 state loads with none held. Format 4 writes
// in a log entry only the recent runs and durations a job added since the
// entry before (jobRecord.RecentAdded); format 3 logs hold them whole.
// Format 5 writes in a log entry only the records held of a job whose
// state did not change otherwise (jobRecord.HeldOnly).
// Format 6 adds a job's pauses (pausedRecord): an older jobwatch would
// drop them and judge a paused job's expected runs missed, so it refuses
// the state; a format-5 state loads with no job paused.
// Format 7 leaves out of a log entry what the state on disk has: a
// held-only record's decided_until, the fields of its run a record held
// shares with the one before it (heldRecord.AsBefore), a record's sources
// and last duration and exit code when unchanged (leaveOutUnchanged).
const Version = 7

const formatName = "jobwatch-state"

// jobsPerFrame is how many jobs one snapshot entry holds.
const jobsPerFrame = 512

// keptEntryBuffer: a log entry's buffers are kept for the next one up to
// this size (a stream's commits are a few tens of KiB).
const keptEntryBuffer = 1 << 20

// compactMin: the log is not compacted before it holds this many bytes.
const compactMin = 1 << 20

// Store is an open state directory. It holds an exclusive lock on it, so two
// jobwatch processes never share one.
type Store struct {
	dir  string
	lock *os.File

	gen      uint64   // generation of the snapshot on disk
	log      *os.File // open for appending; nil: the next save compacts
	logSize  int64    // bytes of valid entries in the log
	snapSize int64
	legacy   bool // LegacyFile is present
	// payload and frame: the last log entry's, kept for the next one.
	payload, frame []byte
	// now stamps what a save writes (Written); SetClock.
	now func() time.Time
}

// SetClock sets the clock a save's Written is read from (default
// time.Now): the model's, which a step back of the host's clock does not
// move back, so that after a restart the model's clock is not behind the
// time it had when the state was saved.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// clock is the time a save writes.
func (s *Store) clock() time.Time {
	if s.now == nil {
		return time.Now().UTC()
	}
	return s.now().UTC()
}

// Open creates the state directory if needed (mode 0700), locks it, and
// removes the temporary files a save interrupted by a crash left behind.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	// The directory (or, through a symlink, the one it names) must not be
	// writable by others: they could replace the state files between a
	// save's write and its rename, or put a link where one is created.
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("state directory %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("state directory %s is writable by others than its owner (mode %v): use a directory only jobwatch's user can write (chmod go-w), such as the default, which jobwatch creates with mode 0700", dir, fi.Mode().Perm())
	}
	lockPath := filepath.Join(dir, lockFile)
	fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state lock %s: %w", lockPath, err)
	}
	f := os.NewFile(uintptr(fd), lockPath)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another jobwatch", dir)
		}
		return nil, fmt.Errorf("state lock %s: %w", lockPath, err)
	}
	s := &Store{dir: dir, lock: f}
	if err := s.removeTemporaries(); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// isTemporary: the names os.CreateTemp gives a save's files before their
// rename (format 1 wrote state.json.tmp*).
func isTemporary(name string) bool {
	for _, f := range []string{SnapshotFile, LogFile, LegacyFile} {
		if strings.HasPrefix(name, f+".tmp") {
			return true
		}
	}
	return false
}

func (s *Store) removeTemporaries() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && isTemporary(e.Name()) {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return fmt.Errorf("removing a save's leftover: %w", err)
			}
		}
	}
	return nil
}

// Path is the state directory.
func (s *Store) Path() string { return s.dir }

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// header is the first entry of the snapshot and of the log.
type header struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	Kind       string    `json:"kind"` // "snapshot" or "log"
	Generation uint64    `json:"generation"`
	Written    time.Time `json:"written"`
	// Jobwatch is the version of the jobwatch that wrote the file, so
	// that an older one refusing a newer format can say which to run.
	Jobwatch string `json:"jobwatch,omitempty"`
}

// NewerError is a state written in a format newer than this jobwatch reads:
// by a newer jobwatch, which must be run again (a downgrade). It is no
// damage: the state is left as it is, to be read by that version.
type NewerError struct {
	Path     string
	Format   int    // the state's format version
	Jobwatch string // the version of jobwatch that wrote it; "" if unsaid
}

func (e *NewerError) Error() string {
	by := "a newer jobwatch"
	if e.Jobwatch != "" {
		by = "jobwatch " + e.Jobwatch
	}
	this := version.Version
	if this == "" {
		this = "unknown"
	}
	return fmt.Sprintf("state %s was written by %s (state format %d); this jobwatch (version %s) reads state formats 1 to %d: run %s or newer on it (the state is left as it is; moving it away would start over and count every record again)",
		e.Path, by, e.Format, this, Version, by)
}

// entry is every other entry: the jobs and sources of one save (in the
// log), or a part of the whole state (in the snapshot).
type entry struct {
	Jobs           map[string]*jobRecord    `json:"jobs,omitempty"`
	RemovedJobs    []string                 `json:"removed_jobs,omitempty"`
	Sources        map[string]*sourceRecord `json:"sources,omitempty"`
	RemovedSources []string                 `json:"removed_sources,omitempty"`
	// Retired, when present, replaces the set of retired sources.
	Retired map[string]*sourceRecord `json:"retired,omitempty"`
	// RetiredNone: there are no retired sources any more.
	RetiredNone bool `json:"retired_none,omitempty"`
	// End marks the last entry of a complete snapshot.
	End bool `json:"end,omitempty"`
	// Written is when a log entry was saved (format 3).
	Written time.Time `json:"written,omitzero"`
	// jobs, when set, are written as Jobs, each record made as it is
	// encoded and then let go: an entry of a catch-up's 12,500 jobs held
	// 22 MB of records at once.
	jobs *lazyJobs
}

// lazyJobs are the jobs of an entry as the names to write, sorted, and
// the record of each, which may be the same record filled again for the
// next name.
type lazyJobs struct {
	names  []string
	record func(name string) *jobRecord
}

// Load reads the saved state; it returns nil and no error when there is none
// yet. A state that cannot be read is an error naming its file: jobwatch
// never silently starts over, which would count every record again. A log
// entry cut short by a crash during a save is not an error: that save did
// not happen, and the next save writes a new snapshot without it.
func (s *Store) Load() (*model.Snapshot, error) {
	snapData, err := readNoFollow(s.path(SnapshotFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Lstat(s.path(LogFile)); err == nil {
			return nil, fmt.Errorf("state %s has no snapshot %s beside it: the state directory is damaged (move it away to start over, which reads every source again)", s.path(LogFile), SnapshotFile)
		}
		snap, err := s.loadLegacy()
		if snap != nil {
			s.legacy = true
		}
		return snap, err
	case err != nil:
		return nil, fmt.Errorf("reading state %s: %w", s.path(SnapshotFile), err)
	}
	if _, err := os.Lstat(s.path(LegacyFile)); err == nil {
		s.legacy = true // left by a crash right after the migration
	}
	st := &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}
	gen, err := readSnapshot(snapData, st)
	if err != nil {
		return nil, corrupt(s.path(SnapshotFile), err)
	}
	s.gen, s.snapSize = gen, int64(len(snapData))
	if err := s.loadLog(st); err != nil {
		return nil, err
	}
	return st, nil
}

// corrupt is the error of a state file that cannot be read, err saying
// why; a file of a newer format is not corrupt (NewerError).
func corrupt(path string, err error) error {
	var newer *NewerError
	if errors.As(err, &newer) {
		newer.Path = path
		return newer
	}
	return fmt.Errorf("state %s is corrupt (move the state directory away to start over, which reads every source again): %w", path, err)
}

func readHeader(data []byte, kind string) (header, int, error) {
	payload, off, err := nextFrame(data, 0)
	if err != nil {
		return header{}, 0, fmt.Errorf("header: %w", err)
	}
	var h header
	if err := json.Unmarshal(payload, &h); err != nil || h.Format != formatName || h.Kind != kind {
		return header{}, 0, fmt.Errorf("not a jobwatch %s", kind)
	}
	if h.Version > Version {
		return header{}, 0, &NewerError{Format: h.Version, Jobwatch: h.Jobwatch}
	}
	if h.Version < 2 {
		return header{}, 0, fmt.Errorf("state format version %d, this jobwatch reads 1 to %d", h.Version, Version)
	}
	return h, off, nil
}

func readSnapshot(data []byte, st *model.Snapshot) (uint64, error) {
	h, off, err := readHeader(data, "snapshot")
	if err != nil {
		return 0, err
	}
	st.Written = h.Written
	for {
		payload, next, err := nextFrame(data, off)
		if err != nil {
			return 0, fmt.Errorf("entry at byte %d: %w", off, err)
		}
		var e entry
		if err := json.Unmarshal(payload, &e); err != nil {
			return 0, fmt.Errorf("entry at byte %d: %w", off, err)
		}
		apply(st, &e, h.Version)
		off = next
		if e.End {
			break
		}
	}
	if off != len(data) {
		return 0, fmt.Errorf("%d bytes after the end", len(data)-off)
	}
	return h.Generation, nil
}

// loadLog applies the log's entries to st. A log of another generation is
// what a crash during a compaction leaves: the snapshot holds all of it.
func (s *Store) loadLog(st *model.Snapshot) error {
	path := s.path(LogFile)
	data, err := readNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // crash between the snapshot's rename and the log's
	}
	if err != nil {
		return fmt.Errorf("reading state %s: %w", path, err)
	}
	if err := readLog(data, s.gen, st); err != nil {
		return corrupt(path, err)
	}
	// Appending goes on after a compaction, not after what Load read, so a
	// torn tail is never followed by new entries.
	return nil
}

// readLog applies the entries of a log of generation gen to st; a log of
// another generation is ignored, and so is a torn last entry.
func readLog(data []byte, gen uint64, st *model.Snapshot) error {
	h, off, err := readHeader(data, "log")
	if err != nil {
		return err // written whole and renamed: never torn
	}
	if h.Generation != gen {
		return nil
	}
	for off < len(data) {
		payload, next, err := nextFrame(data, off)
		if err != nil {
			if tornTail(data, off) {
				return nil // a save cut short: it did not happen
			}
			return fmt.Errorf("entry at byte %d: %w", off, err)
		}
		var e entry
		if err := json.Unmarshal(payload, &e); err != nil {
			return fmt.Errorf("entry at byte %d: %w", off, err)
		}
		apply(st, &e, h.Version)
		off = next
	}
	return nil
}

// apply applies e, an entry of a file of format version.
func apply(st *model.Snapshot, e *entry, version int) {
	if e.Written.After(st.Written) {
		st.Written = e.Written
	}
	for _, n := range e.RemovedJobs {
		delete(st.Jobs, n)
	}
	for _, n := range e.RemovedSources {
		delete(st.Sources, n)
	}
	for n, r := range e.Jobs {
		if r != nil {
			var before *model.SavedJob
			if b, ok := st.Jobs[n]; ok {
				before = &b
			}
			st.Jobs[n] = r.toModelAfter(before, version)
		}
	}
	for n, r := range e.Sources {
		if r != nil {
			st.Sources[n] = r.toModel()
		}
	}
	if e.RetiredNone {
		st.Retired = nil
	}
	if e.Retired != nil {
		st.Retired = map[string]*model.SourceState{}
		for n, r := range e.Retired {
			if r != nil {
				st.Retired[n] = r.toModel()
			}
		}
	}
}

func readNoFollow(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("is a symbolic link, which jobwatch does not follow")}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

// Save writes changes c, made to prev (what the last save that succeeded
// wrote, nil for none), after which the saved state is all (which already
// holds c). It appends c to the log, as one entry, and fsyncs the log;
// every so often (when the log has outgrown the snapshot, after a reload,
// after a failed save) it writes all as a new snapshot instead. A crash at
// any point leaves the state of before the save or the state after it.
func (s *Store) Save(c *model.Changes, prev, all *model.Saved) error {
	if c.Empty() {
		return nil
	}
	if s.log == nil || c.Full || s.logSize > 2*max(s.snapSize, compactMin) || ManyJobs(c, all) {
		return s.compact(all)
	}
	ce := changesEntry(c, prev)
	ce.Written = s.clock()
	var err error
	if s.payload, err = appendEntry(s.payload[:0], ce); err != nil {
		return err
	}
	s.frame = appendFrame(s.frame[:0], s.payload)
	frame := s.frame
	if _, err := s.log.WriteAt(frame, s.logSize); err != nil {
		return s.appendFailed(fmt.Errorf("saving state %s: %w", s.log.Name(), err))
	}
	if err := unix.Fdatasync(int(s.log.Fd())); err != nil {
		return s.appendFailed(fmt.Errorf("saving state %s: %w", s.log.Name(), err))
	}
	s.logSize += int64(len(frame))
	if cap(s.payload) > keptEntryBuffer {
		s.payload, s.frame = nil, nil // a burst's entry: not kept for a stream's
	}
	return nil
}

// ManyJobs reports whether c changes so many jobs (a catch-up, a burst)
// that a snapshot, written frame by frame, is better than one log entry:
// the entry is one frame, encoded whole in memory (64 MB for 50,000 jobs,
// which encoding/json's pool then keeps), and the snapshot at most four
// times its size.
func ManyJobs(c *model.Changes, all *model.Saved) bool {
	return len(c.Jobs) > max(jobsPerFrame, len(all.JobNames())/4)
}

// appendFailed drops what a failed append may have left at the log's end,
// so the next entry follows the last complete one; if even that fails, the
// next save writes a new snapshot.
func (s *Store) appendFailed(err error) error {
	if terr := s.log.Truncate(s.logSize); terr != nil || unix.Fdatasync(int(s.log.Fd())) != nil {
		s.log.Close()
		s.log = nil
	}
	return err
}

// changesEntry is the log entry of c, made to prev: a job prev holds gets
// the runs and durations it added since (the log after the entries
// before holds prev).
func changesEntry(c *model.Changes, prev *model.Saved) *entry {
	e := &entry{RemovedJobs: c.RemovedJobs, RemovedSources: c.RemovedSources}
	if len(c.Jobs) > 0 {
		var scratch jobRecord
		e.jobs = &lazyJobs{names: slices.Sorted(maps.Keys(c.Jobs)), record: func(n string) *jobRecord {
			var before *model.JobView
			if prev != nil && !slices.Contains(c.RemovedJobs, n) { // removed, then set: loaded after the removal
				before = prev.Job(n)
			}
			return scratch.fill(c.Jobs[n], before)
		}}
	}
	if len(c.Sources) > 0 {
		e.Sources = make(map[string]*sourceRecord, len(c.Sources))
		for n, v := range c.Sources {
			e.Sources[n] = sourceToRecord(&v.SourceState)
		}
	}
	setRetired(e, c.Retired, c.Retired != nil)
	return e
}

func setRetired(e *entry, retired map[string]model.SourceState, changed bool) {
	if !changed {
		return
	}
	if len(retired) == 0 {
		e.RetiredNone = true
		return
	}
	e.Retired = make(map[string]*sourceRecord, len(retired))
	for n, r := range retired {
		e.Retired[n] = sourceToRecord(&r)
	}
}

// compact writes all as the snapshot of the next generation, then an empty
// log of that generation, each through a temporary file renamed into place.
func (s *Store) compact(all *model.Saved) error {
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	gen := s.gen + 1
	now := s.clock()
	size, err := s.writeFile(SnapshotFile, func(fw *frameWriter) error {
		return writeSnapshot(fw, all, gen, now)
	})
	if err != nil {
		return err
	}
	s.gen, s.snapSize = gen, size
	logSize, err := s.writeFile(LogFile, func(fw *frameWriter) error {
		return fw.add(header{Format: formatName, Version: Version, Kind: "log", Generation: gen, Written: now, Jobwatch: version.Version})
	})
	if err != nil {
		return err
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.removeLegacy(); err != nil {
		return err
	}
	fd, err := unix.Open(s.path(LogFile), unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("saving state: %w", &fs.PathError{Op: "open", Path: s.path(LogFile), Err: err})
	}
	s.log = os.NewFile(uintptr(fd), s.path(LogFile))
	s.logSize = logSize
	return nil
}

// writeSnapshot writes all as a snapshot of generation gen: its header,
// then the sources with the first jobs, then the other jobs, jobsPerFrame
// to a frame. The snapshot is written frame by frame as it is encoded: no
// buffer of the whole state exists (at 50,000 jobs it was 64 MB, and the
// runtime kept its pages).
func writeSnapshot(fw *frameWriter, all *model.Saved, gen uint64, now time.Time) error {
	if err := fw.add(header{Format: formatName, Version: Version, Kind: "snapshot", Generation: gen, Written: now, Jobwatch: version.Version}); err != nil {
		return err
	}
	first := &entry{Sources: map[string]*sourceRecord{}}
	for _, v := range all.Sources() {
		first.Sources[v.Name] = sourceToRecord(&v.SourceState)
	}
	setRetired(first, all.Retired(), true)
	names := all.JobNames()
	e := first
	var scratch jobRecord
	record := func(n string) *jobRecord { return scratch.fill(all.Job(n), nil) }
	for i := 0; ; i += jobsPerFrame {
		chunk := names[min(i, len(names)):min(i+jobsPerFrame, len(names))]
		if len(chunk) > 0 {
			e.jobs = &lazyJobs{names: chunk, record: record}
		}
		e.End = i+jobsPerFrame >= len(names)
		if err := fw.add(e); err != nil {
			return err
		}
		if e.End {
			return nil
		}
		e = &entry{}
	}
}

// removeLegacy removes the format-1 state file once a snapshot replaces
// it.
func (s *Store) removeLegacy() error {
	if !s.legacy {
		return nil
	}
	if err := os.Remove(s.path(LegacyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the format-1 state: %w", err)
	}
	s.legacy = false
	return s.syncDir()
}

// frameWriter writes frames to a file through a buffer, and counts them.
type frameWriter struct {
	w       *bufio.Writer
	size    int64
	payload bytes.Buffer
	enc     *json.Encoder
	entry   []byte
	frame   []byte
}

// add writes v as one frame: the same bytes as appendFrame of
// json.Marshal(v); an entry is encoded by appendEntry.
func (fw *frameWriter) add(v any) error {
	var payload []byte
	if e, ok := v.(*entry); ok {
		var err error
		if fw.entry, err = appendEntry(fw.entry[:0], e); err != nil {
			return err
		}
		payload = fw.entry
	} else {
		fw.payload.Reset()
		if err := fw.enc.Encode(v); err != nil {
			return fmt.Errorf("encoding state: %w", err)
		}
		payload = bytes.TrimSuffix(fw.payload.Bytes(), []byte("\n")) // Encode ends with a newline; Marshal does not
	}
	fw.frame = appendFrameHeader(fw.frame[:0], payload)
	if _, err := fw.w.Write(fw.frame); err != nil {
		return err
	}
	if _, err := fw.w.Write(payload); err != nil {
		return err
	}
	fw.size += int64(frameHeader + len(payload))
	return nil
}

// writeFile writes name atomically with the frames write adds: a
// temporary file in the directory, fsynced, renamed over name. It returns
// the file's size. The caller fsyncs the directory.
func (s *Store) writeFile(name string, write func(*frameWriter) error) (int64, error) {
	tmp, err := os.CreateTemp(s.dir, name+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("saving state: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	fw := &frameWriter{w: bufio.NewWriterSize(tmp, 256<<10)}
	fw.enc = json.NewEncoder(&fw.payload)
	fw.enc.SetEscapeHTML(true) // as json.Marshal
	err = write(fw)
	if err == nil {
		err = fw.w.Flush()
	}
	if err != nil {
		tmp.Close()
		return 0, fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("saving state %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.path(name)); err != nil {
		return 0, fmt.Errorf("saving state: %w", err)
	}
	return fw.size, nil
}

func (s *Store) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("saving state: syncing %s: %w", s.dir, err)
	}
	return nil
}

// Close releases the directory lock.
func (s *Store) Close() error {
	if s.log != nil {
		s.log.Close()
	}
	return s.lock.Close()
}
