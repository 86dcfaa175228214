package tail

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// sibling is a rotated copy of the path: path.N (N digits, path.1 the newest)
// or path-DATE (digits and dashes, e.g. -20240131 or -2024-01-31, in
// ascending order). Compressed ones (path.2.gz) are never siblings.
type sibling struct {
	path  string
	dev   uint64
	ino   uint64
	size  int64
	mtime int64
	num   int    // path.N
	date  string // path-DATE
}

// siblings lists the path's rotated siblings, oldest first: the dated ones
// (by date), then the numbered ones (highest number first). A path is
// expected to use one of the two styles.
func (t *Tailer) siblings() []sibling {
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return nil
	}
	var out []sibling
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), t.base)
		if !ok || len(rest) < 2 {
			continue
		}
		s := sibling{path: t.dir + string(os.PathSeparator) + e.Name()}
		switch rest[0] {
		case '.':
			n, err := strconv.Atoi(rest[1:])
			if err != nil || n < 0 || !allIn(rest[1:], "0123456789") {
				continue
			}
			s.num = n
		case '-':
			if len(rest) < 9 || !allIn(rest[1:], "0123456789-") {
				continue
			}
			s.date = rest[1:]
		default:
			continue
		}
		fi, err := os.Stat(s.path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		s.dev, s.ino = ids(fi)
		s.size = fi.Size()
		s.mtime = fi.ModTime().UnixNano()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.date != "") != (b.date != "") {
			return a.date != ""
		}
		if a.date != "" {
			return a.date < b.date
		}
		return a.num > b.num
	})
	return out
}

func allIn(s, set string) bool {
	for _, c := range s {
		if !strings.ContainsRune(set, c) {
			return false
		}
	}
	return true
}

// matches reports whether the sibling is the file p was taken from: same
// device, inode and first bytes.
func (s sibling) matches(p Position) bool {
	if s.dev != p.Dev || s.ino != p.Ino {
		return false
	}
	return s.fingerprintMatches(p)
}

func (s sibling) fingerprintMatches(p Position) bool {
	if s.size < int64(p.FPLen) {
		return false
	}
	f, _, err := openRegular(s.path)
	if err != nil {
		return false
	}
	defer f.Close()
	return fingerprintMatches(f, p.FPLen, p.Fingerprint)
}

// resume finds the file a saved Position was taken from: the path's file, or
// a rotated sibling (found by device, inode and fingerprint, or by
// fingerprint alone for a copytruncate copy). It finishes that file from the
// offset, reads the siblings rotated after it, then follows the path. If the
// file is gone, it counts a reset and reads the siblings modified since the
// saved ModTime, then the path from 0.
func (t *Tailer) resume(saved Position) {
	if saved.Offset < 0 || saved.Line < 0 || saved.FPLen < 0 || saved.FPLen > FingerprintBytes {
		t.startOver(saved)
		return
	}
	pf, perr := openFile(t.path)
	if perr == nil && pf.dev == saved.Dev && pf.ino == saved.Ino && pf.size >= saved.Offset &&
		fingerprintMatches(pf.f, saved.FPLen, saved.Fingerprint) {
		pf.off, pf.readOff, pf.line = saved.Offset, saved.Offset, saved.Line
		t.setErr(nil)
		t.cur = pf
		return
	}
	last := t.readRotated(saved, pf)
	if t.ctx.Err() != nil {
		if pf != nil {
			pf.f.Close()
		}
		return
	}
	if pf != nil {
		t.setErr(nil)
		t.startFile(pf)
		t.cur = pf
	} else {
		t.setErr(perr)
		t.last = last
	}
	t.flush(t.cur) // resets not yet reported with lines
}

// startOver reads the path from its start, counting a reset, for a saved
// position that is invalid.
func (t *Tailer) startOver(saved Position) {
	t.log.Warn("invalid saved position; reading the file from the start",
		"offset", saved.Offset, "line", saved.Line, "fp_len", saved.FPLen)
	t.resets++
	t.count(func(st *Stats) { st.Resets++ })
	if t.openPath() {
		t.flush(t.cur)
	} else {
		t.flush(nil)
	}
}

// readRotated reads the rotated siblings written since saved, except next,
// the path's file: from saved's offset the one saved was taken from, then
// those rotated after it; or, if it is gone, counting a reset, those
// modified since saved's ModTime. It returns the position last read, if any.
func (t *Tailer) readRotated(saved Position, next *file) *Position {
	sibs := t.siblings()
	idx := savedIn(sibs, saved)
	if idx < 0 {
		t.log.Warn("saved position not found (file replaced, truncated or removed while stopped); reading from the nearest point",
			"offset", saved.Offset, "line", saved.Line)
		t.resets++
		t.count(func(st *Stats) { st.Resets++ })
		return t.readSiblings(modifiedSince(sibs, saved.ModTime), next)
	}
	var last *Position
	s := sibs[idx]
	t.log.Info("resuming in a rotated file", "rotated", s.path, "offset", saved.Offset)
	if fl, err := openFile(s.path); err == nil {
		fl.off, fl.readOff, fl.line = saved.Offset, saved.Offset, saved.Line
		t.startFile(fl)
		t.read(fl, true)
		p := fl.position()
		last = &p
		fl.f.Close()
	}
	t.count(func(st *Stats) { st.Rotations++ })
	if p := t.readSiblings(after(sibs, idx), next); p != nil {
		last = p
	}
	return last
}

// savedIn is the index of the sibling saved was taken from, -1 if none:
// the first with its device, inode and fingerprint, else the newest with
// its fingerprint (a copytruncate copy).
func savedIn(sibs []sibling, saved Position) int {
	for i, s := range sibs {
		if s.size >= saved.Offset && s.matches(saved) {
			return i
		}
	}
	if saved.FPLen > 0 {
		for i := len(sibs) - 1; i >= 0; i-- {
			if sibs[i].size >= saved.Offset && sibs[i].fingerprintMatches(saved) {
				return i
			}
		}
	}
	return -1
}

// readNewer reads the siblings rotated after the file last was taken from
// (all of them if it is among them; else those modified since), except the
// file about to be followed.
func (t *Tailer) readNewer(last Position, next *file) {
	sibs := t.siblings()
	for i, s := range sibs {
		if s.matches(last) {
			t.readSiblings(after(sibs, i), next)
			return
		}
	}
	t.readSiblings(modifiedSince(sibs, last.ModTime), next)
}

// after returns the siblings rotated after sibs[i]: the later ones of its
// naming style.
func after(sibs []sibling, i int) []sibling {
	var out []sibling
	for _, s := range sibs[i+1:] {
		if (s.date == "") == (sibs[i].date == "") {
			out = append(out, s)
		}
	}
	return out
}

// modifiedSince returns the siblings modified at or after mtime (unix
// nanoseconds), oldest first: the file they should follow is gone, so the
// mtime is all that orders them.
func modifiedSince(sibs []sibling, mtime int64) []sibling {
	var out []sibling
	for _, s := range sibs {
		if s.mtime >= mtime {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].mtime < out[j].mtime })
	return out
}

// readSiblings reads whole rotated files in order and returns the position
// at the end of the last one read.
func (t *Tailer) readSiblings(sibs []sibling, next *file) *Position {
	var last *Position
	for _, s := range sibs {
		if t.ctx.Err() != nil {
			break
		}
		if next != nil && s.dev == next.dev && s.ino == next.ino {
			continue
		}
		fl, err := openFile(s.path)
		if err != nil {
			t.log.Warn("cannot read rotated file", "rotated", s.path, "err", err)
			continue
		}
		t.log.Info("reading rotated file", "rotated", s.path)
		t.startFile(fl)
		t.read(fl, true)
		p := fl.position()
		last = &p
		fl.f.Close()
	}
	return last
}

// fingerprint hashes the first n bytes of f (fewer if f is shorter).
func fingerprint(f *os.File, n int64) (string, int) {
	if n <= 0 {
		return "", 0
	}
	b := make([]byte, n)
	m, _ := f.ReadAt(b, 0)
	if m == 0 {
		return "", 0
	}
	sum := sha256.Sum256(b[:m])
	return hex.EncodeToString(sum[:]), m
}

// fingerprintMatches reports whether f's first n bytes hash to fp.
func fingerprintMatches(f *os.File, n int, fp string) bool {
	if n <= 0 {
		return true
	}
	if n > FingerprintBytes {
		return false
	}
	got, m := fingerprint(f, int64(n))
	return m == n && got == fp
}

func ids(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// nlink is the number of names fl's file has (0: deleted).
func nlink(fl *file) uint64 {
	fi, err := fl.f.Stat()
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
