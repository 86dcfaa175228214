package tail

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLines writes data to a file in chunks (cut where cuts say), stepping the
// Tailer after each, then rotates the file; the lines delivered must be data
// split at newlines (the unterminated tail as a line of its own at the
// rotation), each cut to maxLine bytes with TooLong.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte{1, 2}, uint8(0))
	f.Add([]byte("short\nthis one is long\n\n\nend"), []byte{3, 7, 20}, uint8(5))
	f.Add([]byte("0123456789\n0123456789"), []byte{4, 4, 4, 4, 4}, uint8(9))
	f.Add(bytes.Repeat([]byte("xy\n"), 100), []byte{}, uint8(1))
	f.Add([]byte("\n\n\n"), []byte{1, 1, 1}, uint8(2))
	f.Fuzz(func(t *testing.T, data, cuts []byte, ml uint8) {
		maxLine := DefaultMaxLineBytes
		if ml > 0 {
			maxLine = int(ml%64) + 1
		}
		var want []string
		lines := bytes.Split(data, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for _, l := range lines {
			if len(l) > maxLine {
				want = append(want, "!"+string(l[:maxLine]))
			} else {
				want = append(want, string(l))
			}
		}

		dir := t.TempDir()
		path := filepath.Join(dir, "runs.log")
		writeFile(t, path, "")
		h := startTailer(t, path, nil, Options{MaxLineBytes: maxLine})
		rest := data
		for _, c := range cuts {
			n := min(int(c), len(rest))
			appendFile(t, path, string(rest[:n]))
			rest = rest[n:]
			h.w.Step()
		}
		appendFile(t, path, string(rest))
		h.w.Step()
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, "")
		h.w.Step()
		equal(t, "lines", h.take(), want)
		h.stop()
	})
}

// FuzzPosition resumes from arbitrary saved positions (they come from a state
// file): no crash, and the file is then followed.
func FuzzPosition(f *testing.F) {
	f.Add(int64(4), 4, int64(2), "", true, true)
	f.Add(int64(-1), 0, int64(0), "x", false, false)
	f.Add(int64(1<<40), 1<<30, int64(-5), "zz", true, false)
	f.Add(int64(2), 2, int64(1), "", true, false)
	f.Fuzz(func(t *testing.T, off int64, fpLen int, line int64, fp string, sameFile, rightFP bool) {
		dir := t.TempDir()
		path := filepath.Join(dir, "runs.log")
		writeFile(t, path, "a\nb\n")
		p := Position{Offset: off, FPLen: fpLen, Line: line, Fingerprint: fp}
		if sameFile {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			p.Dev, p.Ino = ids(fi)
		}
		if rightFP {
			fl, err := openFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p.Fingerprint, p.FPLen = fl.fp, fl.fpLen
			fl.f.Close()
		}
		h := startTailer(t, path, &p, Options{})
		h.take()
		appendFile(t, path, "c\n")
		got := h.step()
		if len(got) == 0 || got[len(got)-1] != "c" {
			t.Fatalf("after resuming from %+v: got %q, want the appended line", p, got)
		}
		h.stop()
	})
}
