// The cache of the jobs' lines: segments of consecutive jobs, rebuilt
// when one of their views changes.

package collector

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/jobwatch/jobwatch/model"
)

// segmentJobs is how many jobs, consecutive in name order, a segment
// holds: a change of one job re-renders it and copies the others' bytes.
const segmentJobs = 64

// segment is the cached exposition of consecutive jobs, laid out family by
// family, so that a scrape writes each family of 64 jobs from one piece of
// memory. A segment is never changed once made.
type segment struct {
	// ids are the views its jobs were rendered from, by identity only: a
	// segment that kept the views would keep alive the states of every
	// job changed since (three copies of each while a restart's records
	// wait for the watermark), until the next scrape.
	ids   []weak.Pointer[model.JobView]
	names []string
	// bases: what each job's values computed at scrape time come from.
	bases []jobBasis
	// data[i] holds family i's sample lines of every job in compact form
	// (see compactLines), each job's after their length as a uvarint
	// (nextJob); nil when no job has any. Lengths rather than offsets: one
	// byte a job and family rather than four, 7 MB at 50,000 jobs.
	data [][]byte
	// labels holds each job's `{job_name="..."}`: job k's is
	// labels[loff[k]:loff[k+1]].
	labels []byte
	loff   []uint32
	// calendar[k]: job k's period and next run are computed at scrape
	// time; nil when no job of the segment has a calendar schedule.
	calendar []bool
}

func (s *segment) label(k int) []byte { return s.labels[s.loff[k]:s.loff[k+1]] }

// jobBasis is what a scrape computes a job's watch from.
type jobBasis struct {
	model.WatchBasis
	retired bool // none of the families computed at scrape time
}

// where is a job's place in the current segments.
type where struct {
	seg *segment
	k   int
}

// cache is the segments of one format for one saved state.
type cache struct {
	format int
	opts   Options
	used   time.Time // last scrape of the format
	saved  weak.Pointer[model.Saved]
	segs   []*segment
	rs     []*renderer // one per goroutine of buildAll
}

// places finds an unchanged job's bytes in the segments before an update.
// A job is mostly at the same place, segment and index, as before: only
// added or removed jobs move the others, and only then is the index by
// name made (a map of every job would cost about 200 bytes a job for
// good).
type places struct {
	// old are the segments before the update, a copy of the cache's: while
	// no job moved, segment i of the update reads only old[i], which is let
	// go once its successor is built (release).
	old     []*segment
	inPlace bool
	byName  map[string]where
	once    sync.Once
}

// newPlaces are the places of the jobs in old, the segments before an
// update to the jobs names.
func newPlaces(old []*segment, names []string) *places {
	p := &places{old: slices.Clone(old), inPlace: true}
	for i, seg := range old {
		if !slices.Equal(seg.names, names[min(i*segmentJobs, len(names)):min((i+1)*segmentJobs, len(names))]) {
			p.inPlace = false
			break
		}
	}
	return p
}

// of is the place of the view id of job name, the k-th of segment i, in
// the old segments when it is there unchanged.
func (p *places) of(id weak.Pointer[model.JobView], name string, i, k int) (where, bool) {
	if p.inPlace {
		if i >= len(p.old) || k >= len(p.old[i].ids) {
			return where{}, false
		}
		return where{p.old[i], k}, p.old[i].ids[k] == id
	}
	p.once.Do(func() {
		p.byName = map[string]where{}
		for _, seg := range p.old {
			for k, name := range seg.names {
				p.byName[name] = where{seg, k}
			}
		}
	})
	w, ok := p.byName[name]
	return w, ok && w.seg.ids[w.k] == id
}

// release lets the old segment i go once its successor is built: when
// every job changes at once (a catch-up's end), the old segments and the
// new are not all alive together.
func (p *places) release(i int) {
	if p.inPlace && i < len(p.old) {
		p.old[i] = nil
	}
}

// update brings c to saved, rendering the jobs whose views changed, and
// returns the segments in name order.
func (c *cache) update(saved *model.Saved, now time.Time) []*segment {
	id := weak.Make(saved)
	if id == c.saved && c.segs != nil {
		return c.segs
	}
	names := saved.JobNames()
	segs := make([]*segment, (len(names)+segmentJobs-1)/segmentJobs)
	views := make([]*model.JobView, len(names))
	ids := make([]weak.Pointer[model.JobView], len(names))
	for i, name := range names {
		views[i] = saved.Job(name)
		ids[i] = weak.Make(views[i])
	}
	seg := func(i int) segJobs {
		from, to := i*segmentJobs, min((i+1)*segmentJobs, len(views))
		return segJobs{views[from:to], ids[from:to]}
	}
	var todo []int // the segments to build
	for i := range segs {
		if i < len(c.segs) && slices.Equal(c.segs[i].ids, seg(i).ids) {
			segs[i] = c.segs[i]
			continue
		}
		todo = append(todo, i)
	}
	old := newPlaces(c.segs, names)
	c.segs = nil // the old segments go as they are replaced (places.release)
	c.buildAll(segs, todo, seg, old, now)
	c.saved, c.segs = id, segs
	return segs
}

// segmentBuilt, when set (by tests), is called after segment i of an
// update is built by one goroutine.
var segmentBuilt func(i int)

// parallelSegments is how many segments to build make it worth another
// goroutine: the first scrape of a format renders every job, 100,000 of
// them in about half a second on one core.
const parallelSegments = 16

// segJobs are the views of a segment's jobs, and their ids.
type segJobs struct {
	views []*model.JobView
	ids   []weak.Pointer[model.JobView]
}

// buildAll builds segs[i], of the jobs seg(i), for each i of todo:
// on as many cores as there are when there are many segments to build.
// Segments are independent, and builds only read the old ones.
func (c *cache) buildAll(segs []*segment, todo []int, seg func(int) segJobs, old *places, now time.Time) {
	workers := max(1, min(runtime.GOMAXPROCS(0), len(todo)/parallelSegments))
	for len(c.rs) < workers {
		c.rs = append(c.rs, &renderer{opts: c.opts})
	}
	if workers == 1 {
		for _, i := range todo {
			segs[i] = c.build(c.rs[0], seg(i), i, old, now)
			old.release(i)
			if segmentBuilt != nil {
				segmentBuilt(i)
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	panics := make([]any, workers)
	for w := range workers {
		wg.Go(func() {
			// A panic goes on in the scrape's goroutine, not in this one,
			// where nothing would recover it.
			defer func() { panics[w] = recover() }()
			for n := int(next.Add(1)) - 1; n < len(todo); n = int(next.Add(1)) - 1 {
				segs[todo[n]] = c.build(c.rs[w], seg(todo[n]), todo[n], old, now)
				old.release(todo[n])
			}
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// build makes segment at, of jobs, with r: the bytes of a job whose view
// is the one rendered before are copied, the others rendered.
func (c *cache) build(r *renderer, jobs segJobs, at int, old *places, now time.Time) *segment {
	views := jobs.views
	tables()
	nf := len(families)
	r.compact = r.compact[:0]
	if r.entries == nil {
		r.entries = make([]entry, segmentJobs)
	}
	n := len(views)
	s := &segment{ids: slices.Clone(jobs.ids), names: make([]string, n), bases: make([]jobBasis, n),
		data: make([][]byte, nf), loff: make([]uint32, n+1)}
	// Where each job's bytes come from: an old segment (split into its
	// jobs' once) or a new entry. parts[i*n+k] are job k's of family i.
	r.parts = slices.Grow(r.parts[:0], nf*n)[:nf*n]
	r.labels = slices.Grow(r.labels[:0], n)[:n]
	var split *segment
	var calendar []bool
	for k, v := range views {
		s.names[k] = v.Spec.Name
		if w, ok := old.of(s.ids[k], v.Spec.Name, at, k); ok {
			if w.seg != split {
				split, r.oldParts = w.seg, w.seg.split(r.oldParts)
			}
			s.bases[k] = w.seg.bases[w.k]
			for i := range nf {
				r.parts[i*n+k] = r.oldParts[i*len(w.seg.ids)+w.k]
			}
			r.labels[k] = w.seg.label(w.k)
			if w.seg.calendar != nil && w.seg.calendar[w.k] {
				calendar = setFlag(calendar, n, k)
			}
			continue
		}
		e := &r.entries[k]
		v = v.Shown() // facts at once (model/facts.go)
		s.bases[k] = jobBasis{WatchBasis: v.WatchBasis(), retired: !v.Retired.IsZero()}
		r.render(e, v, c.format, now)
		for i := range nf {
			r.parts[i*n+k] = e.data[e.off[i]:e.off[i+1]]
		}
		r.labels[k] = e.label
		if e.calendar {
			calendar = setFlag(calendar, n, k)
		}
	}
	s.calendar = calendar
	for i := range nf {
		size, lines := 0, 0
		for _, b := range r.parts[i*n : (i+1)*n] {
			size += uvarintLen(len(b)) + len(b)
			lines += len(b)
		}
		if lines == 0 {
			continue // no job has a line of the family
		}
		d := make([]byte, 0, size)
		for _, b := range r.parts[i*n : (i+1)*n] {
			d = binary.AppendUvarint(d, uint64(len(b)))
			d = append(d, b...)
		}
		s.data[i] = d
	}
	size := 0
	for _, l := range r.labels {
		size += len(l)
	}
	s.labels = make([]byte, 0, size)
	for k, l := range r.labels {
		s.labels = append(s.labels, l...)
		s.loff[k+1] = uint32(len(s.labels))
	}
	// The renderer keeps no old segment's bytes alive.
	clear(r.parts)
	clear(r.oldParts)
	clear(r.labels)
	return s
}

// setFlag sets flags[k] of n, making flags when nil.
func setFlag(flags []bool, n, k int) []bool {
	if flags == nil {
		flags = make([]bool, n)
	}
	flags[k] = true
	return flags
}

// split appends the bytes of each job of s to parts[:0]: job k's of family
// i are parts[i*len(s.ids)+k].
func (s *segment) split(parts [][]byte) [][]byte {
	n := len(s.ids)
	parts = slices.Grow(parts[:0], len(s.data)*n)[:len(s.data)*n]
	for i, d := range s.data {
		for k := range n {
			parts[i*n+k], d = nextJob(d)
		}
	}
	return parts
}

// nextJob is the bytes of the first job in d, a family's data in a
// segment (or the rest of it), and the jobs after it; none in an empty d.
func nextJob(d []byte) (job, rest []byte) {
	if len(d) == 0 {
		return nil, nil
	}
	n, l := uint64(d[0]), 1
	if n >= 0x80 {
		n, l = binary.Uvarint(d)
	}
	return d[l : l+int(n)], d[l+int(n):]
}

// uvarintLen is the length of n as a uvarint.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}
