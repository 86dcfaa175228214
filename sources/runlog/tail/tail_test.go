package tail

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppendsAndPartialLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\nb\npar")
	h := startTailer(t, path, nil, Options{})
	equal(t, "existing file read from the start", h.take(), []string{"a", "b"})
	if p := h.position(); p.Offset != 4 || p.Line != 2 {
		t.Errorf("position %+v, want offset 4 (before the partial line), line 2", p)
	}
	equal(t, "nothing new", h.step(), nil)
	appendFile(t, path, "tial")
	equal(t, "partial line is held back", h.step(), nil)
	appendFile(t, path, "\nc\n\n")
	equal(t, "completed line", h.step(), []string{"partial", "c", ""})
	if p := h.position(); p.Offset != 15 || p.Line != 5 {
		t.Errorf("position %+v, want offset 15, line 5", p)
	}
}

func TestFirstStartIgnoresRotatedSiblings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path+".1", "old1\n")
	writeFile(t, path+".2.gz", "gz\n")
	writeFile(t, path+"-20240101", "dated\n")
	writeFile(t, path, "cur\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "first start", h.take(), []string{"cur"})
	// A sibling appearing or growing is not news either.
	writeFile(t, path+".3", "other\n")
	appendFile(t, path+".1", "more\n")
	equal(t, "sibling changes", h.step(), nil)
}

// Rename-and-create rotation: the old file is finished (including what was
// written to it after the rename), then the new one is read from 0.
func TestRotationRenameAndCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\nb\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a", "b"})

	// A writer holding the old file open keeps writing after the rename.
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rename(t, path, path+".1")
	w.WriteString("c\n")
	writeFile(t, path, "d\n")
	equal(t, "after rotation", h.step(), []string{"c", "d"})
	if s := h.tl.Stats(); s.Rotations != 1 || s.Truncations != 0 || s.Resets != 0 {
		t.Errorf("stats %+v, want 1 rotation", s)
	}
	if fds := fdsUnder(t, dir); len(fds) != 2 { // ours on runs.log, the writer's on runs.log.1
		t.Errorf("open fds under the dir: %q, want the new file's and the writer's", fds)
	}
	// Old file deleted later (logrotate's rotate N): no fd of it left open.
	w.Close()
	os.Remove(path + ".1")
	appendFile(t, path, "e\n")
	equal(t, "new file", h.step(), []string{"e"})
	assertNoDeletedFDs(t, dir)
}

// A line cut by a rotation: the old file's unterminated tail is delivered as
// a line of its own at the rotation, never glued to the new file's first line.
func TestRotationDeliversFragment(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\nfrag")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a"})
	rename(t, path, path+".1")
	writeFile(t, path, "ment\nb\n")
	equal(t, "after", h.step(), []string{"frag", "ment", "b"})
}

// Rotation by rename without create (logrotate nocreate): the writer may
// still append to the renamed file, so it is followed until the path exists.
func TestRenameWithoutCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a"})
	rename(t, path, path+".1")
	appendFile(t, path+".1", "b\n")
	equal(t, "renamed file still followed", h.step(), []string{"b"})
	appendFile(t, path+".1", "c\n")
	writeFile(t, path, "d\n")
	equal(t, "then the new file", h.step(), []string{"c", "d"})
}

// copytruncate: same inode, size below the offset: read from 0, count a
// truncation. Lines written before the copy but not yet read come from it.
func TestCopyTruncate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\nb\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a", "b"})

	appendFile(t, path, "c\n")
	copyFile(t, path, path+".1")
	truncate(t, path)
	appendFile(t, path, "d\n")
	equal(t, "after copytruncate", h.step(), []string{"c", "d"})

	// Plain truncation, no copy: the file is read again from 0.
	appendFile(t, path, "e\n")
	equal(t, "e", h.step(), []string{"e"})
	truncate(t, path)
	appendFile(t, path, "f\n")
	equal(t, "after truncation", h.step(), []string{"f"})
	if s := h.tl.Stats(); s.Truncations != 2 || s.Rotations != 0 {
		t.Errorf("stats %+v, want 2 truncations", s)
	}
	if p := h.position(); p.Offset != 2 || p.Line != 1 {
		t.Errorf("position %+v, want offset 2, line 1", p)
	}
}

// Truncated and rewritten past the offset between two looks: the
// fingerprint of the first bytes changed.
func TestTruncatedAndRegrownWhileRunning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a"})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // same inode
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("xyz\nw\n")
	f.Close()
	equal(t, "after", h.step(), []string{"xyz", "w"})
	if s := h.tl.Stats(); s.Truncations != 1 {
		t.Errorf("stats %+v, want 1 truncation", s)
	}
}

// Deleted, then back later: wait quietly, close the deleted file, read the
// new one from 0.
func TestDeletedAndBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\nb")
	h := startTailer(t, path, nil, Options{})
	equal(t, "before", h.take(), []string{"a"})
	os.Remove(path)
	equal(t, "deleted", h.step(), []string{"b"})
	assertNoDeletedFDs(t, dir)
	for range 5 {
		equal(t, "still missing", h.step(), nil)
	}
	if h.tl.Err() == nil {
		t.Error("Err() = nil while the file is missing")
	}
	writeFile(t, path, "c\n")
	equal(t, "back", h.step(), []string{"c"})
	if h.tl.Err() != nil {
		t.Errorf("Err() = %v, want nil", h.tl.Err())
	}
	if n := h.logs.count("WARN") + h.logs.count("ERROR"); n != 0 {
		t.Errorf("%d warnings or errors logged: %q", n, h.logs.lines())
	}
	if n := h.logs.count("waiting for it"); n != 1 {
		t.Errorf("%d 'waiting' messages, want 1: %q", n, h.logs.lines())
	}
}

// Missing at the first start: wait, then read it from 0.
func TestMissingAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "runs.log")
	h := startTailer(t, path, nil, Options{})
	equal(t, "missing", h.step(), nil)
	os.Mkdir(filepath.Dir(path), 0o755)
	writeFile(t, path, "a\n")
	equal(t, "created", h.step(), []string{"a"})
}

// Two rotations while the reader lags (paused via the Waker): the old file
// is finished from its offset, then runs.log.1, then the new runs.log.
// Compressed and older siblings are not read.
func TestTwoRotationsWhilePaused(t *testing.T) {
	for _, style := range []string{"numbered", "dated"} {
		t.Run(style, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "runs.log")
			writeFile(t, path+".3", "ancient\n")
			writeFile(t, path+".3.gz", "gz\n")
			writeFile(t, path, "a\nb\n")
			h := startTailer(t, path, nil, Options{})
			equal(t, "before", h.take(), []string{"a", "b"})
			appendFile(t, path, "c\n")
			rotateTwice(t, path, style)
			equal(t, "after two rotations", h.step(), []string{"c", "d", "e", "f"})
			if s := h.tl.Stats(); s.Rotations != 1 || s.Resets != 0 {
				t.Errorf("stats %+v", s)
			}
			assertNoDeletedFDs(t, dir)
		})
	}
}

// rotateTwice rotates path twice, each time creating a new file: runs.log
// (then holding "c") ends as runs.log.2, "d\ne\n" as runs.log.1 and "f\n" is
// the new runs.log (or the dateext equivalents).
func rotateTwice(t *testing.T, path, style string) {
	t.Helper()
	if style == "dated" {
		rename(t, path, path+"-20240101")
		writeFile(t, path, "d\n")
		appendFile(t, path, "e\n")
		rename(t, path, path+"-20240102")
		writeFile(t, path, "f\n")
		return
	}
	rename(t, path, path+".1")
	writeFile(t, path, "d\n")
	os.Remove(path + ".2.gz")
	rename(t, path+".1", path+".2")
	appendFile(t, path, "e\n")
	rename(t, path, path+".1")
	writeFile(t, path, "f\n")
	writeFile(t, path+".2.gz", "compressed, never read\n")
}

// Restart from a saved Position: two rotations while jobwatch was stopped.
func TestTwoRotationsWhileStopped(t *testing.T) {
	for _, style := range []string{"numbered", "dated"} {
		t.Run(style, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "runs.log")
			writeFile(t, path+".3", "ancient\n")
			writeFile(t, path, "a\nb\n")
			h := startTailer(t, path, nil, Options{})
			equal(t, "before", h.take(), []string{"a", "b"})
			saved := roundTrip(t, h.position())
			h.stop()

			appendFile(t, path, "c\n")
			rotateTwice(t, path, style)
			h = startTailer(t, path, &saved, Options{})
			equal(t, "after restart", h.take(), []string{"c", "d", "e", "f"})
			if r := h.totalResets(); r != 0 {
				t.Errorf("%d resets, want 0", r)
			}
			appendFile(t, path, "g\n")
			equal(t, "then follows", h.step(), []string{"g"})
			assertNoDeletedFDs(t, dir)
		})
	}
}

// roundTrip stores the position as the caller does, as JSON.
func roundTrip(t *testing.T, p Position) Position {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Position
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q != p {
		t.Fatalf("JSON round trip: %+v != %+v", q, p)
	}
	return q
}

func TestRestart(t *testing.T) {
	type tc struct {
		name   string
		before string                                 // file content before the stop
		change func(t *testing.T, path string)        // while stopped
		tweak  func(p Position, path string) Position // the saved position, as found
		want   []string
		resets int
		line1  int64 // Number of the first line read after the restart
	}
	for _, c := range []tc{{
		name:   "appended while stopped",
		before: "a\nb\npart",
		change: func(t *testing.T, path string) { appendFile(t, path, "ial\nc\n") },
		want:   []string{"partial", "c"},
		line1:  3,
	}, {
		name:   "nothing changed",
		before: "a\nb\n",
		change: func(*testing.T, string) {},
		want:   nil,
	}, {
		// Same inode, truncated and grown again past the saved offset: the
		// size alone would not tell.
		name:   "truncated and regrown while stopped",
		before: "a\nb\n",
		change: func(t *testing.T, path string) {
			truncate(t, path)
			appendFile(t, path, "xxxxxx\nyy\n")
		},
		want:   []string{"xxxxxx", "yy"},
		resets: 1,
		line1:  1,
	}, {
		name:   "truncated below the offset while stopped",
		before: "aaaa\nbbbb\n",
		change: func(t *testing.T, path string) {
			truncate(t, path)
			appendFile(t, path, "x\n")
		},
		want:   []string{"x"},
		resets: 1,
		line1:  1,
	}, {
		name:   "copytruncate while stopped",
		before: "a\nb\n",
		change: func(t *testing.T, path string) {
			appendFile(t, path, "c\n")
			copyFile(t, path, path+".1")
			truncate(t, path)
			appendFile(t, path, "d\n")
		},
		want:  []string{"c", "d"},
		line1: 3,
	}, {
		name:   "replaced by a new file while stopped",
		before: "a\nb\n",
		change: func(t *testing.T, path string) {
			os.Remove(path)
			writeFile(t, path, "new1\nnew2\nnew3\n")
		},
		want:   []string{"new1", "new2", "new3"},
		resets: 1,
		line1:  1,
	}, {
		// Inode numbers are reused by the file system, but not on demand:
		// the saved position is given the new file's dev and inode, which
		// is what a reused inode looks like to the Tailer.
		name:   "inode reused by a different file",
		before: "a\nb\n",
		change: func(t *testing.T, path string) {
			os.Remove(path)
			writeFile(t, path, "other\nfile\n")
		},
		tweak: func(p Position, path string) Position {
			fi, _ := os.Stat(path)
			p.Dev, p.Ino = ids(fi)
			return p
		},
		want:   []string{"other", "file"},
		resets: 1,
		line1:  1,
	}, {
		name:   "removed while stopped",
		before: "a\nb\n",
		change: func(t *testing.T, path string) { os.Remove(path) },
		want:   nil,
		resets: 1,
	}, {
		name:   "renamed without create while stopped",
		before: "a\nb\n",
		change: func(t *testing.T, path string) {
			appendFile(t, path, "c\n")
			rename(t, path, path+".1")
		},
		want: []string{"c"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "runs.log")
			writeFile(t, path, c.before)
			h := startTailer(t, path, nil, Options{})
			h.take()
			saved := roundTrip(t, h.position())
			h.stop()
			c.change(t, path)
			if c.tweak != nil {
				saved = c.tweak(saved, path)
			}
			h = startTailer(t, path, &saved, Options{})
			first := h.firstNumber()
			got := h.take()
			equal(t, "after restart", got, c.want)
			if r := h.totalResets(); r != c.resets {
				t.Errorf("%d resets reported, want %d", r, c.resets)
			}
			if s := h.tl.Stats(); s.Resets != c.resets {
				t.Errorf("Stats().Resets = %d, want %d", s.Resets, c.resets)
			}
			if c.line1 != 0 && first != c.line1 {
				t.Errorf("first line read is number %d, want %d", first, c.line1)
			}
			assertNoDeletedFDs(t, dir)
			// The path is followed afterwards.
			appendFile(t, path, "z\n")
			equal(t, "follows", h.step(), []string{"z"})
		})
	}
}

// The zero Position is the same as nil.
func TestZeroPosition(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "a\n")
	h := startTailer(t, path, &Position{}, Options{})
	equal(t, "zero position", h.take(), []string{"a"})
	if h.totalResets() != 0 {
		t.Error("zero position counted as a reset")
	}
}

// A line longer than any buffer is delivered once, as a TooLong prefix,
// with bounded memory; the lines around it are fine.
func TestLongLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	long := strings.Repeat("x", 10<<20)
	writeFile(t, path, "before\n"+long+"\nafter\n")
	h := startTailer(t, path, nil, Options{})
	got := h.take()
	if len(got) != 3 || got[0] != "before" || got[2] != "after" || got[1] != "!"+long[:DefaultMaxLineBytes] {
		t.Fatalf("got %d lines (%d bytes in the second), want before, a TooLong 1 MiB prefix, after", len(got), len(got[1]))
	}
	if len(h.tl.buf) > DefaultMaxLineBytes+1 || cap(h.tl.long) > DefaultMaxLineBytes {
		t.Errorf("buffers grew to %d and %d bytes", len(h.tl.buf), cap(h.tl.long))
	}
	if p := h.position(); p.Line != 3 || p.Offset != int64(7+len(long)+1+6) {
		t.Errorf("position %+v", p)
	}
}

// A long line arriving in pieces, its newline last; and one cut by a
// rotation. Small MaxLineBytes to cross the buffer's edges.
func TestLongLineInPieces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	writeFile(t, path, "ok\n0123")
	h := startTailer(t, path, nil, Options{MaxLineBytes: 8})
	equal(t, "start", h.take(), []string{"ok"})
	appendFile(t, path, "456789")
	equal(t, "too long, not complete", h.step(), nil)
	if p := h.position(); p.Offset != 3 {
		t.Errorf("offset %d, want 3: an incomplete line is not delivered", p.Offset)
	}
	appendFile(t, path, "abcdef")
	equal(t, "still not complete", h.step(), nil)
	appendFile(t, path, "gh\nexactly8\nnine_ch_x\n")
	equal(t, "complete", h.step(), []string{"!01234567", "exactly8", "!nine_ch_"})
	appendFile(t, path, "012345678901")
	rename(t, path, path+".1")
	writeFile(t, path, "new\n")
	equal(t, "cut by a rotation", h.step(), []string{"!01234567", "new"})
}

func TestBatchesAtMostBatchLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.log")
	var b strings.Builder
	for range 3*BatchLines + 5 {
		b.WriteString("line\n")
	}
	writeFile(t, path, b.String())
	h := startTailer(t, path, nil, Options{})
	if got := h.take(); len(got) != 3*BatchLines+5 {
		t.Errorf("%d lines, want %d", len(got), 3*BatchLines+5)
	}
	if h.calls < 4 {
		t.Errorf("%d calls, want at least 4", h.calls)
	}
}
