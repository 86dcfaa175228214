package checkin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A spool is the append-only log of acknowledged check-ins, in segments
// DIR/NNNNNNNN.spool. A check-in is written and fsynced before its request is
// answered; concurrent check-ins share one write and one fsync (group
// commit). The source reads the segments from its saved position, so a
// check-in is applied through the same path as every other record and a
// kill -9 at any point loses none and applies none twice.
type spool struct {
	dir        string
	maxSegment int64

	mu       sync.Mutex
	f        *os.File
	seg      int
	size     int64
	buf      []byte
	batch    *commit
	changed  chan struct{} // closed, and replaced, after every commit
	closed   bool
	kick     chan struct{}
	finished chan struct{}
}

// commit is one group of appends that share a write and an fsync.
type commit struct {
	done chan struct{}
	err  error
}

// defaultMaxSegment is the size at which a new segment is started.
const defaultMaxSegment = 64 << 20

const segmentSuffix = ".spool"

func segmentName(n int) string { return fmt.Sprintf("%08d%s", n, segmentSuffix) }

// segments lists the segment numbers in dir, ascending.
func segments(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segmentSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if n, err := strconv.Atoi(name); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// openSpool opens (creating, mode 0700) the spool directory and its last
// segment for appending. A torn last line, from a crash in the middle of a
// write that was therefore never acknowledged, is cut off.
func openSpool(dir string, maxSegment int64) (*spool, error) {
	if maxSegment <= 0 {
		maxSegment = defaultMaxSegment
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("check-in spool: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("check-in spool %s is not a directory", dir)
	}
	segs, err := segments(dir)
	if err != nil {
		return nil, fmt.Errorf("check-in spool: %w", err)
	}
	s := &spool{dir: dir, maxSegment: maxSegment, batch: &commit{done: make(chan struct{})},
		changed: make(chan struct{}), kick: make(chan struct{}, 1), finished: make(chan struct{})}
	seg := 1
	if len(segs) > 0 {
		seg = segs[len(segs)-1]
	}
	if err := s.openSegment(seg); err != nil {
		return nil, err
	}
	if err := s.cutTornTail(); err != nil {
		s.f.Close()
		return nil, err
	}
	go s.flusher()
	return s, nil
}

func (s *spool) openSegment(n int) error {
	path := filepath.Join(s.dir, segmentName(n))
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("check-in spool %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("check-in spool %s is not a regular file", path)
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.seg, s.size = f, n, fi.Size()
	return syncDir(s.dir)
}

// cutTornTail truncates the segment after its last newline.
func (s *spool) cutTornTail() error {
	if s.size == 0 {
		return nil
	}
	const chunk = 64 << 10
	end := s.size
	buf := make([]byte, chunk)
	for end > 0 {
		start := max(end-chunk, 0)
		n, err := s.f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("check-in spool: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if end == s.size {
		return nil
	}
	if err := s.f.Truncate(end); err != nil {
		return fmt.Errorf("check-in spool: cutting a torn record: %w", err)
	}
	s.size = end
	return s.f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// errClosed: the spool is closed (jobwatch is stopping).
var errClosed = errors.New("check-in spool is closed")

// Append writes line (ending in a newline) and returns once it is on disk.
func (s *spool) Append(line []byte) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	s.buf = append(s.buf, line...)
	c := s.batch
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a commit is already due
	}
	<-c.done
	return c.err
}

// flusher commits what has been appended, one group at a time: appends made
// while a commit's fsync runs join the next one.
func (s *spool) flusher() {
	defer close(s.finished)
	for range s.kick {
		s.mu.Lock()
		buf, c := s.buf, s.batch
		s.buf, s.batch = nil, &commit{done: make(chan struct{})}
		closed := s.closed
		s.mu.Unlock()
		if len(buf) > 0 {
			c.err = s.write(buf)
		} else if closed {
			c.err = errClosed
		}
		close(c.done)
		if closed {
			return
		}
	}
}

// write appends buf to the current segment and fsyncs it, starting a new
// segment first when the current one is full. Only the flusher writes.
func (s *spool) write(buf []byte) error {
	if s.size >= s.maxSegment {
		if err := s.openSegment(s.seg + 1); err != nil {
			return err
		}
	}
	n, err := s.f.Write(buf)
	s.size += int64(n)
	if err != nil {
		// A partial write would leave a torn line for the next append to
		// run into: cut it off now.
		_ = s.f.Truncate(s.size - int64(n))
		s.size -= int64(n)
		return fmt.Errorf("check-in spool: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("check-in spool: %w", err)
	}
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// Changed returns a channel closed at the next commit.
func (s *spool) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Close stops accepting appends, commits what was appended and closes the
// segment.
func (s *spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.kick <- struct{}{}
	<-s.finished
	return s.f.Close()
}

// Position is where a reader of the spool resumes.
type Position struct {
	Segment int   `json:"segment"`
	Offset  int64 `json:"offset"`
}

// maxLine bounds one spool line; a check-in's output is cut well below it.
const maxLine = 1 << 20

// readFrom reads the complete lines after pos, at most max of them, and
// returns where reading would go on. At the end of a segment that a later one
// follows, it moves on to the later one.
func readFrom(dir string, pos Position, max int) ([][]byte, Position, error) {
	lines, next, err := readLines(dir, pos, max)
	out := make([][]byte, len(lines))
	for i := range lines {
		out[i] = lines[i].data
	}
	return out, next, err
}

// spoolLine is a line of the spool and where it starts.
type spoolLine struct {
	at   Position
	data []byte // nil: a line too long to be a check-in
}

// readLines is readFrom with each line's position.
func readLines(dir string, pos Position, max int) ([]spoolLine, Position, error) {
	if pos.Segment == 0 {
		pos.Segment = 1
	}
	var lines []spoolLine
	for len(lines) < max {
		path := filepath.Join(dir, segmentName(pos.Segment))
		got, next, err := readSegment(path, pos, max-len(lines))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return lines, pos, err
		}
		lines, pos = append(lines, got...), next
		if len(got) > 0 && len(lines) >= max {
			break
		}
		// At the end of this segment: go on to the next one, if there is
		// one (segments are numbered without gaps, but one may have been
		// removed after it was read).
		segs, err := segments(dir)
		if err != nil {
			return lines, pos, err
		}
		i, _ := slices.BinarySearch(segs, pos.Segment+1)
		if i == len(segs) {
			break
		}
		if len(got) > 0 || !errors.Is(err, os.ErrNotExist) {
			// Re-read this segment once more before leaving it: lines
			// committed after the read above belong to it.
			more, np, err := readSegment(path, pos, max-len(lines))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return lines, pos, err
			}
			lines, pos = append(lines, more...), np
			if len(more) > 0 {
				continue
			}
		}
		pos = Position{Segment: segs[i]}
	}
	return lines, pos, nil
}

func readSegment(path string, pos Position, max int) ([]spoolLine, Position, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pos, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
		return nil, pos, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var lines []spoolLine
	for len(lines) < max {
		at := pos
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Longer than any check-in: skip it whole, counted by the
			// caller as an unreadable record.
			n := int64(len(line))
			for errors.Is(err, bufio.ErrBufferFull) && n < maxLine {
				line, err = r.ReadSlice('\n')
				n += int64(len(line))
			}
			if err != nil {
				break // torn, or still being written: not yet complete
			}
			pos.Offset += n
			lines = append(lines, spoolLine{at: at})
			continue
		}
		if err != nil {
			break // EOF: a partial line is not complete yet
		}
		pos.Offset += int64(len(line))
		lines = append(lines, spoolLine{at: at, data: bytes.Clone(line[:len(line)-1])})
	}
	return lines, pos, nil
}

// removeBefore deletes the segments before seg: read and saved.
func removeBefore(dir string, seg int) error {
	segs, err := segments(dir)
	if err != nil {
		return err
	}
	for _, n := range segs {
		if n >= seg {
			break
		}
		if err := os.Remove(filepath.Join(dir, segmentName(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
