// Package tail makes one pathname look like one perpetual stream of lines,
// although the file underneath is appended to, rotated (renamed and
// recreated), copied and truncated, deleted and recreated, or replaced while
// jobwatch was stopped. It is jobwatch's run-log reader; its rotation and
// truncation semantics are described in docs/runlog.md.
//
// A Tailer reads complete lines and hands them to its caller in batches,
// together with the Position just after the last of them. A caller that
// stores that Position only after it has processed the batch resumes exactly
// after the last processed line: nothing lost, nothing repeated.
package tail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jobwatch/jobwatch/internal/jsonstr"
)

const (
	// DefaultMaxLineBytes is the default Options.MaxLineBytes.
	DefaultMaxLineBytes = 1 << 20
	// DefaultPollInterval is the default Options.PollInterval.
	DefaultPollInterval = time.Second
	// FingerprintBytes is the most bytes from a file's start that a
	// Position's Fingerprint covers.
	FingerprintBytes = 1024
	// PositionJSONBytes is the longest AppendJSON of a Position the Tailer
	// wrote (a fingerprint of 64 hex digits or none, every number at its
	// longest): a buffer of this capacity takes any without growing.
	PositionJSONBytes = 256
	// BatchLines is the most lines one call of Run's callback gets.
	BatchLines = 4096
	// The read buffer starts small (idle Tailers of small files stay small),
	// doubles while reads fill it, up to readBufferBytes, and beyond that
	// (up to MaxLineBytes+1) only while a single line does not fit.
	initialBufferBytes = 16 << 10
	readBufferBytes    = 256 << 10
)

// Position identifies where reading stopped. The caller persists it (as JSON)
// and passes it back to New after a restart. The zero Position means the same
// as nil: nothing read yet, start at the beginning of the path's file.
type Position struct {
	// Identity of the file being read.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Fingerprint is the hex SHA-256 of the file's first FPLen bytes
	// (FPLen <= FingerprintBytes), so that a file truncated and rewritten, or
	// a new file that got a reused inode number, is not taken for the old one.
	Fingerprint string `json:"fingerprint"`
	FPLen       int    `json:"fp_len"`
	// Offset is the byte offset just after the last complete line delivered.
	Offset int64 `json:"offset"`
	// Line is the number of complete lines delivered from this file.
	Line int64 `json:"line"`
	// ModTime is the file's mtime (unix nanoseconds) when it was last read;
	// it orders rotated siblings when the file itself cannot be found.
	ModTime int64 `json:"mod_time"`
}

// AppendJSON appends p's JSON to b: the same bytes as json.Marshal(p), so the
// positions already saved in state files read back unchanged. The position
// is encoded for every batch, and encoding/json's reflection was a
// noticeable part of a stream's CPU.
func (p Position) AppendJSON(b []byte) []byte {
	b = append(b, `{"dev":`...)
	b = strconv.AppendUint(b, p.Dev, 10)
	b = append(b, `,"ino":`...)
	b = strconv.AppendUint(b, p.Ino, 10)
	b = append(b, `,"fingerprint":`...)
	b = jsonstr.Append(b, p.Fingerprint)
	b = append(b, `,"fp_len":`...)
	b = strconv.AppendInt(b, int64(p.FPLen), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, p.Offset, 10)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, p.Line, 10)
	b = append(b, `,"mod_time":`...)
	b = strconv.AppendInt(b, p.ModTime, 10)
	return append(b, '}')
}

// Line is one line read.
type Line struct {
	// Text is the line without its newline. It is valid only during the
	// callback: copy what must outlive it.
	Text []byte
	// Number is the 1-based line number within its file.
	Number int64
	// TooLong: the line exceeded Options.MaxLineBytes. Text holds only its
	// first MaxLineBytes bytes; the rest was skipped, never buffered.
	TooLong bool
}

// Options tune a Tailer. The zero value is usable.
type Options struct {
	// MaxLineBytes is the longest line delivered whole (default 1 MiB).
	// Longer lines are delivered once, with TooLong and a prefix.
	MaxLineBytes int
	// PollInterval is how often an idle Tailer stats its file even without
	// an inotify event (default 1s). Used by the default Waker.
	PollInterval time.Duration
	// Waker decides when an idle Tailer looks at its file again. The default
	// combines inotify (fsnotify, on the file's directory) with a
	// PollInterval timer. Tests use a StepWaker to step the Tailer.
	Waker Waker
	// Logger gets rotations, truncations, resets and read errors.
	Logger *slog.Logger
	// Idle, when set, runs on Run's goroutine each time the Tailer has read
	// what there is, before it waits: a caller that hands batches on to be
	// processed elsewhere finishes them there, so that an idle Tailer (a
	// StepWaker's Step returning) means every line read has been processed.
	Idle func()
}

// Stats counts what happened to the file since New. The caller can expose
// them as counters.
type Stats struct {
	// Rotations: the path was found naming a new file (rename and create,
	// or delete and create), and reading moved on to it.
	Rotations int
	// Truncations: the file being read shrank below the read offset or its
	// first bytes changed (copytruncate), and it was read again from 0.
	Truncations int
	// Resets: a saved Position could not be found (the file was replaced,
	// truncated or removed while jobwatch was stopped) and reading restarted
	// at the nearest point.
	Resets int
}

// Tailer follows one path. Create it with New; call Run once.
type Tailer struct {
	path string
	dir  string
	base string
	from *Position
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	stats Stats
	err   error

	// Owned by Run's goroutine.
	ctx      context.Context
	fn       func([]Line, Position, int)
	cur      *file     // the file followed; nil while waiting for the path
	last     *Position // the file read last, while cur is nil
	buf      []byte    // buf[:n] is an incomplete line read from the file
	n        int
	long     []byte // prefix of a too long line being skipped
	skipping bool
	batch    []Line
	resets   int // not yet handed to the callback
	missing  bool
}

// file is a file being read, its identity and how far it has been read.
type file struct {
	f       *os.File
	name    string
	dev     uint64
	ino     uint64
	fp      string
	fpLen   int
	off     int64 // just after the last complete line delivered
	line    int64 // complete lines delivered
	readOff int64 // next byte to read: buf[:n] holds the bytes before it
	size    int64 // at the last stat
	mtime   int64
}

// New returns a Tailer for path, resuming after from (nil: first start, read
// the existing file from its beginning). It does no I/O: Run does.
func New(path string, from *Position, opts Options) *Tailer {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	path = filepath.Clean(path)
	if from != nil && *from == (Position{}) {
		from = nil
	}
	if from != nil {
		p := *from
		from = &p
	}
	return &Tailer{
		path: path,
		dir:  filepath.Dir(path),
		base: filepath.Base(path),
		from: from,
		opts: opts,
		log:  opts.Logger.With("path", path),
	}
}

// Stats returns the counts so far. It is safe to call from any goroutine.
func (t *Tailer) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Err returns why the path cannot be read now (it does not exist, permission
// denied, it is not a regular file: ErrNotRegular), or nil while a file is
// being followed. Safe from any goroutine.
func (t *Tailer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Run follows the path until ctx is done, then returns nil. fn gets each batch
// of complete lines (at most BatchLines, all from one file), the Position just
// after the last of them, and resets: how many times since the last call a
// saved position could not be found and reading restarted at the nearest
// point. fn may get an empty batch that only reports resets. fn runs on Run's
// goroutine; the lines' Text is valid only until it returns.
func (t *Tailer) Run(ctx context.Context, fn func(lines []Line, pos Position, resets int)) error {
	if fn == nil {
		return errors.New("tail: Run needs a callback")
	}
	w := t.opts.Waker
	if w == nil {
		ww := newWatchWaker(&defaultHub, t.path, t.opts.PollInterval, t.log)
		defer ww.close()
		w = ww
	}
	t.ctx, t.fn = ctx, fn
	defer t.closeCur()
	if t.from != nil {
		t.resume(*t.from)
		t.from = nil
	}
	for {
		t.step()
		if ctx.Err() != nil {
			return nil
		}
		if t.opts.Idle != nil {
			t.opts.Idle()
		}
		if err := w.Wait(ctx); err != nil {
			return nil
		}
		if ow, ok := w.(*watchWaker); ok && ow.overflowed() {
			t.log.Warn("inotify event queue overflowed; statting and reading the file")
		}
	}
}

// step reads what can be read now and follows the path to a new file.
func (t *Tailer) step() {
	for t.ctx.Err() == nil {
		if t.cur == nil && !t.openPath() {
			return
		}
		t.checkTruncation()
		t.read(t.cur, false)
		if t.ctx.Err() != nil {
			return
		}
		fi, err := os.Stat(t.path)
		if err != nil {
			if nlink(t.cur) > 0 {
				// Renamed away and not yet recreated: whoever holds the
				// file open may still write to it. Keep following it.
				return
			}
			t.log.Info("file deleted; waiting for it to come back")
			t.missing = true
			t.read(t.cur, true)
			t.retire()
			return
		}
		if dev, ino := ids(fi); dev == t.cur.dev && ino == t.cur.ino {
			return
		}
		// The path names another file: a rotation. The old file is
		// finished (what was appended since the rename included), then
		// the siblings rotated after it, then the new file from 0.
		t.log.Info("file rotated", "old_line", t.cur.line)
		t.read(t.cur, true)
		if t.ctx.Err() != nil {
			return
		}
		t.count(func(s *Stats) { s.Rotations++ })
		t.retire()
	}
}

// retire closes the current file and remembers where it ended, to find the
// siblings rotated after it.
func (t *Tailer) retire() {
	p := t.cur.position()
	t.last = &p
	t.closeCur()
}

func (t *Tailer) closeCur() {
	if t.cur != nil {
		t.cur.f.Close()
		t.cur = nil
	}
}

// openPath opens the path as the current file, reading from 0. After a file
// was retired, it first reads the rotated siblings newer than that file.
func (t *Tailer) openPath() bool {
	fl, err := openFile(t.path)
	if err != nil {
		t.setErr(err)
		return false
	}
	t.setErr(nil)
	if t.last != nil {
		last := *t.last
		t.last = nil
		t.readNewer(last, fl)
	}
	t.startFile(fl)
	t.cur = fl
	return true
}

// setErr records why the path cannot be opened, logging only changes.
func (t *Tailer) setErr(err error) {
	t.mu.Lock()
	old := t.err
	t.err = err
	t.mu.Unlock()
	switch {
	case err == nil:
		if t.missing || old != nil {
			t.log.Info("file found; reading it")
		}
		t.missing = false
	case errors.Is(err, fs.ErrNotExist):
		if !t.missing {
			t.log.Info("file does not exist; waiting for it")
		}
		t.missing = true
	case old == nil || old.Error() != err.Error():
		t.log.Warn("cannot open file; retrying", "err", err)
	}
}

func (t *Tailer) count(f func(*Stats)) {
	t.mu.Lock()
	f(&t.stats)
	t.mu.Unlock()
}

// checkTruncation detects that the current file was truncated (copytruncate)
// or rewritten in place, and then reads it again from 0, after finishing the
// copy if one is found among the rotated siblings.
func (t *Tailer) checkTruncation() {
	fl := t.cur
	fi, err := fl.f.Stat()
	if err != nil {
		t.log.Warn("cannot stat file", "err", err)
		return
	}
	size := fi.Size()
	fl.mtime = fi.ModTime().UnixNano()
	truncated := size < fl.readOff
	if !truncated && size != fl.size && fl.fpLen > 0 {
		truncated = !fingerprintMatches(fl.f, fl.fpLen, fl.fp)
	}
	fl.size = size
	if !truncated {
		return
	}
	t.count(func(s *Stats) { s.Truncations++ })
	t.log.Info("file truncated; reading it from the start", "offset", fl.off, "size", size)
	// Lines written after our offset and before the truncation are in the
	// copy, if copytruncate left one we can read.
	if fl.fpLen > 0 {
		for _, s := range t.siblings() {
			if (s.dev == fl.dev && s.ino == fl.ino) || s.size <= fl.off {
				continue
			}
			c, err := openFile(s.path)
			if err != nil {
				continue
			}
			if fingerprintMatches(c.f, fl.fpLen, fl.fp) {
				t.log.Info("reading the rest of the truncated file from its copy", "copy", s.path)
				t.startFile(c)
				c.fp, c.fpLen = fl.fp, fl.fpLen
				c.off, c.readOff, c.line = fl.off, fl.off, fl.line
				t.read(c, true)
				c.f.Close()
				break
			}
			c.f.Close()
		}
	}
	t.startFile(fl)
	fl.off, fl.readOff, fl.line = 0, 0, 0
	fl.fp, fl.fpLen = fingerprint(fl.f, min(size, FingerprintBytes))
}

// startFile resets the line reader for another file.
func (t *Tailer) startFile(*file) {
	t.n = 0
	t.skipping = false
}

// read reads fl from fl.readOff to its end, delivering complete lines. final:
// the file will not be read again (rotated away, deleted), so an incomplete
// last line is delivered as a line too: it can never get its newline.
func (t *Tailer) read(fl *file, final bool) {
	maxLine := t.opts.MaxLineBytes
	if t.buf == nil {
		t.buf = make([]byte, min(initialBufferBytes, maxLine+1))
	}
	for t.ctx.Err() == nil && (final || fl.readOff < fl.size) {
		if t.n == len(t.buf) {
			// One incomplete line fills the buffer (it is at most
			// maxLine bytes, see scan): grow.
			t.grow(min(2*len(t.buf), maxLine+1))
		}
		m, err := fl.f.ReadAt(t.buf[t.n:], fl.readOff)
		if m > 0 {
			fl.readOff += int64(m)
			fl.size = max(fl.size, fl.readOff)
			full := t.n+m == len(t.buf)
			t.scan(fl, t.n+m)
			if full && len(t.buf) < readBufferBytes {
				// Much to read: read in larger chunks.
				t.grow(min(2*len(t.buf), max(readBufferBytes, maxLine+1)))
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.log.Warn("read error", "err", err)
			}
			break
		}
		if m == 0 {
			break
		}
	}
	t.flush(fl)
	if !final || t.ctx.Err() != nil {
		return
	}
	switch {
	case t.skipping:
		t.emit(fl, t.long, true, fl.readOff)
	case t.n > 0:
		t.emit(fl, t.buf[:t.n], false, fl.readOff)
	}
	t.flush(fl)
	t.startFile(fl)
}

// grow replaces the read buffer by a larger one, keeping buf[:n].
func (t *Tailer) grow(size int) {
	if size <= len(t.buf) {
		return
	}
	nb := make([]byte, size)
	copy(nb, t.buf[:t.n])
	t.buf = nb
}

// scan splits buf[:end], whose last byte is at fl.readOff-1, into lines.
func (t *Tailer) scan(fl *file, end int) {
	maxLine := t.opts.MaxLineBytes
	data := t.buf[:end]
	base := fl.readOff - int64(end)
	start := 0
	for {
		i := bytes.IndexByte(data[start:], '\n')
		if i < 0 {
			break
		}
		e := start + i
		if t.skipping {
			t.skipping = false
			t.emit(fl, t.long, true, base+int64(e)+1)
			t.flush(fl) // t.long is reused by the next long line
		} else {
			text, tooLong := data[start:e], false
			if len(text) > maxLine {
				text, tooLong = text[:maxLine], true
			}
			t.emit(fl, text, tooLong, base+int64(e)+1)
		}
		start = e + 1
	}
	t.n = 0
	if t.skipping {
		return
	}
	rest := data[start:]
	if len(rest) > maxLine {
		t.flush(fl)
		t.long = append(t.long[:0], rest[:maxLine]...)
		t.skipping = true
		return
	}
	t.flush(fl) // the batch points into buf, about to be overwritten
	t.n = copy(t.buf, rest)
}

func (t *Tailer) emit(fl *file, text []byte, tooLong bool, end int64) {
	fl.line++
	fl.off = end
	t.batch = append(t.batch, Line{Text: text, Number: fl.line, TooLong: tooLong})
	if len(t.batch) >= BatchLines {
		t.flush(fl)
	}
}

// flush hands the batch (and pending resets) to the callback.
func (t *Tailer) flush(fl *file) {
	if len(t.batch) == 0 && t.resets == 0 {
		return
	}
	var pos Position
	if fl != nil {
		if fl.fpLen < FingerprintBytes && fl.readOff > int64(fl.fpLen) {
			fl.fp, fl.fpLen = fingerprint(fl.f, min(fl.readOff, FingerprintBytes))
		}
		pos = fl.position()
	} else if t.last != nil {
		pos = *t.last
	}
	resets := t.resets
	t.resets = 0
	t.fn(t.batch, pos, resets)
	clear(t.batch) // drop references to the buffers
	t.batch = t.batch[:0]
}

func (fl *file) position() Position {
	return Position{
		Dev: fl.dev, Ino: fl.ino,
		Fingerprint: fl.fp, FPLen: fl.fpLen,
		Offset: fl.off, Line: fl.line,
		ModTime: fl.mtime,
	}
}

// ErrNotRegular is why a path naming a named pipe, a socket, a device or a
// directory is not read: only regular files are run logs.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens name for reading if it is a regular file, without ever
// blocking: the type is checked before opening (so a device is not opened,
// unless it replaces the file in between) and again on the open file, and the
// open itself is non-blocking, so a named pipe with no writer cannot hang
// it. A symbolic link is followed: the file it names must be regular.
func openRegular(name string) (*os.File, os.FileInfo, error) {
	if fi, err := os.Stat(name); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(name, fi.Mode())
	}
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if modeOf(st.Mode) != 0 {
		syscall.Close(fd)
		return nil, nil, notRegular(name, modeOf(st.Mode))
	}
	// O_NONBLOCK means nothing to a regular file's reads; clear it anyway,
	// so that the runtime treats the file as the plain file it is.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "fcntl", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// notRegular is ErrNotRegular for name, saying what it is instead.
func notRegular(name string, m fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(m))}
}

// kindOf names the type of a file that is not regular.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	default:
		return "irregular file"
	}
}

// modeOf is the type of a raw stat mode, as an fs.FileMode.
func modeOf(raw uint32) fs.FileMode {
	switch raw & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	default:
		return fs.ModeIrregular
	}
}

// openFile opens name, a regular file, and reads its identity, size, mtime
// and fingerprint.
func openFile(name string) (*file, error) {
	f, fi, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	dev, ino := ids(fi)
	fl := &file{f: f, name: name, dev: dev, ino: ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	fl.fp, fl.fpLen = fingerprint(f, min(fi.Size(), FingerprintBytes))
	return fl, nil
}
