package tail

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

const hexFP = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// checkAppendJSON fails t unless p.AppendJSON appends json.Marshal(p)'s bytes.
func checkAppendJSON(t *testing.T, p Position) {
	t.Helper()
	want, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("prefix")
	got := p.AppendJSON(prefix[:len(prefix):len(prefix)])
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Errorf("AppendJSON(%#v)\n got %q\nwant %q", p, got, append(prefix, want...))
	}
}

func TestPositionAppendJSON(t *testing.T) {
	for _, p := range []Position{
		{},
		{Dev: 2049, Ino: 1311774, Fingerprint: hexFP, FPLen: 1024, Offset: 73_400_320, Line: 489_335, ModTime: 1_767_225_600_123_456_789},
		{Dev: math.MaxUint64, Ino: math.MaxUint64, Fingerprint: hexFP, FPLen: math.MaxInt, Offset: math.MaxInt64, Line: math.MaxInt64, ModTime: math.MaxInt64},
		{Fingerprint: hexFP, FPLen: math.MinInt, Offset: math.MinInt64, Line: -1, ModTime: math.MinInt64},
		{Fingerprint: "9F86D081"}, // needs no escaping, but is not what the Tailer writes: the fallback
		{Fingerprint: `a"b\c<d>e&f`},
		{Fingerprint: "\xff\xfe-not-utf8"},
		{Fingerprint: "line\u2028separator\u2029and\ttab\x00nul"},
		{Fingerprint: "日本語 g"},
	} {
		checkAppendJSON(t, p)
	}
}

// TestPositionJSONBytes: PositionJSONBytes holds the longest position the
// Tailer writes, and is not longer than needed.
func TestPositionJSONBytes(t *testing.T) {
	longest := 0
	for _, p := range []Position{
		{Dev: math.MaxUint64, Ino: math.MaxUint64, Fingerprint: hexFP, FPLen: math.MinInt, Offset: math.MinInt64, Line: math.MinInt64, ModTime: math.MinInt64},
		{Dev: math.MaxUint64, Ino: math.MaxUint64, Fingerprint: hexFP, FPLen: math.MaxInt, Offset: math.MaxInt64, Line: math.MaxInt64, ModTime: math.MaxInt64},
	} {
		longest = max(longest, len(p.AppendJSON(nil)))
	}
	if longest != PositionJSONBytes {
		t.Errorf("longest position is %d bytes, PositionJSONBytes is %d", longest, PositionJSONBytes)
	}
}

// FuzzPositionAppendJSON: AppendJSON gives json.Marshal's bytes for any
// position, a saved one from an edited state file included.
func FuzzPositionAppendJSON(f *testing.F) {
	f.Add(uint64(0), uint64(0), "", 0, int64(0), int64(0), int64(0))
	f.Add(uint64(2049), uint64(1311774), hexFP, 1024, int64(73_400_320), int64(489_335), int64(1_767_225_600_123_456_789))
	f.Add(uint64(math.MaxUint64), uint64(1), `"<&>"`, -1, int64(math.MinInt64), int64(-7), int64(math.MaxInt64))
	f.Add(uint64(1), uint64(2), "\xff\u2028\u2029\x7f\x1f", 3, int64(4), int64(5), int64(6))
	f.Fuzz(func(t *testing.T, dev, ino uint64, fp string, fpLen int, offset, line, modTime int64) {
		checkAppendJSON(t, Position{Dev: dev, Ino: ino, Fingerprint: fp, FPLen: fpLen, Offset: offset, Line: line, ModTime: modTime})
	})
}

// BenchmarkPositionEncode encodes a position as the run-log source does for
// every batch.
//
//	go test -run '^$' -bench PositionEncode -benchmem -benchtime 200000x ./sources/runlog/tail/
func BenchmarkPositionEncode(b *testing.B) {
	p := Position{Dev: 2049, Ino: 1311774, Fingerprint: hexFP, FPLen: 1024, Offset: 73_400_320, Line: 489_335, ModTime: 1_767_225_600_123_456_789}
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		for range b.N {
			positionSink = p.AppendJSON(make([]byte, 0, PositionJSONBytes))
		}
	})
}

// positionSink keeps the benchmark's buffers on the heap, as the model's
// keeping them does.
var positionSink []byte
