// A scrape's writing: the chunks piped to the client while they fill,
// and each job family written back from the cache.

package collector

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// watch is what a scrape computes for one job.
type watch struct {
	since, period, next float64
	stale, hasNext      bool
	retired             bool // none of the families computed at scrape time
}

// scrapeMem is one scrape's reusable memory, and its pipeline: the scrape
// fills a chunk (lines written back from their compact form, the
// registry's families) while a goroutine of its own writes the one before
// to the client and compresses it, so writing back and the socket's system
// calls run on two cores. Without it, writing back was half of a cached
// scrape's CPU time, spent while the socket waited (BENCHMARKS.md).
type scrapeMem struct {
	watches  []watch
	chunk    []byte   // being filled
	chunks   [][]byte // every chunk of this scrapeMem, to reuse
	full     chan []byte
	free     chan []byte
	done     chan struct{}
	failed   atomic.Bool // a write failed: the scrape may stop filling
	err      error       // the first write error, read after done
	panicked any         // a panic of a write, to go on in the scrape's goroutine
}

// chunkSize is how many bytes a chunk holds before it is written (a
// variable for the tests): each write is a chunk of the HTTP response and
// a system call, and at 50,000 jobs 48 KB pieces cost a third of a scrape.
// Three chunks: one filled, one written, one spare, so neither side waits
// on the other's every chunk.
var chunkSize = 512 << 10

const chunksCount = 3

var scrapePool = sync.Pool{New: func() any {
	s := &scrapeMem{}
	for range chunksCount {
		s.chunks = append(s.chunks, make([]byte, 0, 576<<10)) // a job's lines past chunkSize fit
	}
	return s
}}

// pipeTo runs fill, which writes into s, while s's chunks are written to
// out, and returns fill's error, else the first write error.
func (s *scrapeMem) pipeTo(out io.Writer, fill func() error) (err error) {
	s.start(out)
	defer func() {
		if werr := s.finish(); err == nil {
			err = werr
		}
	}()
	return fill()
}

// start starts writing the scrape's chunks to out.
func (s *scrapeMem) start(out io.Writer) {
	s.full = make(chan []byte, chunksCount)
	s.free = make(chan []byte, chunksCount)
	s.done = make(chan struct{})
	s.failed.Store(false)
	s.err, s.panicked = nil, nil
	s.chunk = s.chunks[0][:0]
	for _, c := range s.chunks[1:] {
		s.free <- c[:0]
	}
	go func() {
		defer close(s.done)
		for b := range s.full {
			if !s.failed.Load() {
				s.writeChunk(out, b)
			}
			s.free <- b[:0]
		}
	}()
}

// writeChunk writes b to out. A panic goes on in the scrape's goroutine
// (finish), where net/http recovers it, not in this one, where nothing
// would.
func (s *scrapeMem) writeChunk(out io.Writer, b []byte) {
	defer func() {
		if p := recover(); p != nil {
			s.panicked = p
			s.failed.Store(true)
		}
	}()
	if _, err := out.Write(b); err != nil {
		s.err = err
		s.failed.Store(true)
	}
}

// Write appends p to the chunk being filled (the registry's encoder
// writes here).
func (s *scrapeMem) Write(p []byte) (int, error) {
	s.chunk = append(s.chunk, p...)
	s.sendFull()
	return len(p), nil
}

// sendFull hands the chunk to the writer once it is full.
func (s *scrapeMem) sendFull() {
	if len(s.chunk) >= chunkSize {
		s.full <- s.chunk
		s.chunk = <-s.free
	}
}

// finish writes what is left, waits for the writer and returns the first
// write error.
func (s *scrapeMem) finish() error {
	if len(s.chunk) > 0 {
		s.full <- s.chunk
	}
	close(s.full)
	<-s.done
	s.chunk = nil
	if p := s.panicked; p != nil {
		s.panicked = nil
		panic(p)
	}
	return s.err
}

// writeFamily writes family i of every job into s; it stops early once a
// write has failed (finish returns the error).
func (s *scrapeMem) writeFamily(i, format int, segs []*segment) {
	if format == fmtProtobuf {
		s.writeProtoFamily(i, segs)
		return
	}
	l := &layouts[format]
	names := l.names[i]
	headed := false
	head := func() {
		if !headed {
			s.chunk = append(s.chunk, l.header[i]...)
			headed = true
		}
	}
	always := dynamic(i, false)
	for n, seg := range segs {
		cal := seg.calendar != nil && dynamic(i, true)
		if !always && !cal && len(seg.data[i]) == 0 {
			continue
		}
		rest := seg.data[i]
		for k := range seg.ids {
			label := seg.label(k)
			var b []byte
			b, rest = nextJob(rest)
			if v, ok := s.dynamicValue(i, seg, n, k); ok {
				head()
				s.chunk = append(s.chunk, l.prefix[i]...)
				s.chunk = append(s.chunk, label...)
				s.chunk = append(s.chunk, ' ')
				s.chunk = appendFloat(s.chunk, v, format)
				s.chunk = append(s.chunk, '\n')
			} else if len(b) > 0 {
				head()
				s.chunk = expandLines(s.chunk, b, label[:len(label)-1], names)
			}
			if len(s.chunk) >= chunkSize {
				if s.failed.Load() {
					return
				}
				s.sendFull()
			}
		}
	}
}

// dynamicValue is the value of family i of job k of segs[n] when it is
// computed at scrape time (see dynamic); ok is false when it is not, or
// when the job has no such series (a retired job, no next run).
func (s *scrapeMem) dynamicValue(i int, seg *segment, n, k int) (v float64, ok bool) {
	if !dynamic(i, seg.calendar != nil && seg.calendar[k]) {
		return 0, false
	}
	w := &s.watches[n*segmentJobs+k]
	if w.retired {
		return 0, false
	}
	switch i {
	case famSince:
		v = w.since
	case famStale:
		v = boolFloat(w.stale)
	case famPeriod:
		v = w.period
	case famNext:
		if !w.hasNext {
			return 0, false
		}
		v = w.next
	}
	return v, true
}

// appendFloat formats f as expfmt does in format.
func appendFloat(b []byte, f float64, format int) []byte {
	// Most values are whole and small (counts, exit codes, periods): they
	// are written as integers, which strconv's shortest form of them is
	// (up to 1e6, where it turns to 1e+06), without its general algorithm;
	// -0 is written 0, as expfmt does.
	if i := int64(f); float64(i) == f && i > -1e6 && i < 1e6 {
		b = strconv.AppendInt(b, i, 10)
		if format == fmtOpenMetrics {
			b = append(b, '.', '0')
		}
		return b
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)                  // +Inf, -Inf, NaN as expfmt writes them
	if format == fmtOpenMetrics && !hasAny(b[start:], "e.IN") { // not 1e+06, 0.5, +Inf, NaN
		b = append(b, '.', '0')
	}
	return b
}

// hasAny reports whether b has any of the bytes of set.
func hasAny(b []byte, set string) bool {
	for _, c := range b {
		if strings.IndexByte(set, c) >= 0 {
			return true
		}
	}
	return false
}
