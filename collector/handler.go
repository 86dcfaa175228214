package collector

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// Handler serves /metrics: the registry's families (Go, process, build
// info, the exporter's own), and the sources' (their observations
// included) and the jobs' families of one saved state, merged into one
// exposition sorted by family name, as promhttp would write them.
//
// A job's lines are rendered (by collectJob into a lineSink, which writes
// the bytes expfmt would write for client_golang's const metrics, in the
// compact form the cache keeps) only when its saved view changes:
// model.Saved hands out a new *JobView for a changed job only, and the
// pointer is the version. A scrape writes the cached bytes of the other
// jobs, and computes the values that depend on the time of the scrape
// (seconds since the last success, staleness, and the period and next run
// of calendar schedules) from the stored view. The cache is made of
// segments of consecutive jobs laid out family by family (see segment),
// built on every core when there are many (see buildAll). Text and
// OpenMetrics have a cache each, made on the first scrape asking for the
// format and dropped when the format goes unscraped (cacheIdle). Protobuf,
// which Prometheus asks for only with native histograms on, is served by
// promhttp from the same views, rendered at every scrape.
type Handler struct {
	gatherer prometheus.Gatherer
	saved    func() *model.Saved
	now      func() time.Time
	errorLog *log.Logger
	fallback http.Handler
	errCount *prometheus.CounterVec

	mu     sync.Mutex // one cache update at a time
	caches [2]*cache  // by format: fmtText, fmtOpenMetrics
}

// cacheIdle is how long the cache of a format nobody asks for is kept: a
// Prometheus server scrapes in one format, and the other's bytes would
// hold memory for nothing.
const cacheIdle = 10 * time.Minute

// HandlerOpts configure a Handler.
type HandlerOpts struct {
	// Registry holds every metric but the jobs' and the sources', which
	// the handler renders from Saved. The
	// handler counts its errors in promhttp_metric_handler_errors_total
	// registered there.
	Registry *prometheus.Registry
	// Saved is the state to render, nil before any.
	Saved func() *model.Saved
	// Now is the clock of the values computed at scrape time.
	Now      func() time.Time
	ErrorLog *log.Logger
}

// NewHandler returns the /metrics handler of o.
func NewHandler(o HandlerOpts) *Handler {
	tables()
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{gatherer: o.Registry, saved: o.Saved, now: o.Now, errorLog: o.ErrorLog}
	jobs := prometheus.NewRegistry()
	jobs.MustRegister(New(savedFunc(o.Saved), o.Now)) // jobs and sources, from one View
	h.fallback = promhttp.HandlerFor(prometheus.Gatherers{o.Registry, jobs}, promhttp.HandlerOpts{
		ErrorLog:                            o.ErrorLog,
		Registry:                            o.Registry,
		EnableOpenMetrics:                   true,
		EnableOpenMetricsTextCreatedSamples: true,
	})
	// promhttp registered its error counter; count ours in it too.
	h.errCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	if err := o.Registry.Register(h.errCount); err != nil {
		are := &prometheus.AlreadyRegisteredError{}
		if !errors.As(err, are) {
			panic(err)
		}
		h.errCount = are.ExistingCollector.(*prometheus.CounterVec)
	}
	return h
}

// savedFunc is a Viewer of the state a function returns.
type savedFunc func() *model.Saved

func (f savedFunc) View() ([]model.JobView, []model.SourceView) { return f().View() }

func (f savedFunc) Sources() []*model.SourceView {
	if s := f(); s != nil {
		return s.Sources()
	}
	return nil
}

const (
	fmtText = iota
	fmtOpenMetrics
)

// family is one of a job's metric families, in the order of names.
type family struct {
	desc *prometheus.Desc
	name string // as gathered (a counter's ends in _total)
	help string
}

var (
	families  []family                 // sorted by name
	familyOf  map[*prometheus.Desc]int // index in families
	famSince  int
	famStale  int
	famBehind int
	famPeriod int
	famNext   int
	famLabel  int // always present (retired jobs too), with job_name only: where a job's label is read
	layouts   [2]layout
)

// layout is what a format writes for each family: its header (HELP and
// TYPE lines) and the name each sample line starts with.
type layout struct {
	header [][]byte
	prefix []string
	names  []*lineSet // by family: what its lines start with (see compactLines)
}

// tables fills families, familyOf, the fam indexes and layouts on first
// use rather than in init(): rendering the layouts costs about 0.2 ms, which
// every `jobwatch run` under cron would pay for nothing.
var tables = sync.OnceFunc(func() {
	for _, d := range jobDescs {
		info := descInfo[d]
		families = append(families, family{desc: d, name: info.name, help: info.help})
	}
	slices.SortFunc(families, func(a, b family) int { return strings.Compare(a.name, b.name) })
	familyOf = make(map[*prometheus.Desc]int, len(families))
	for i, f := range families {
		familyOf[f.desc] = i
	}
	famSince, famStale, famBehind = familyOf[sinceSuccessDesc], familyOf[staleDesc], familyOf[behindDesc]
	famPeriod, famNext = familyOf[periodDesc], familyOf[nextRunDesc]
	famLabel = familyOf[runningDesc]
	for f := range layouts {
		layouts[f] = newLayout(f)
	}
	descLinesOf = newDescLines()
})

// newLayout renders a job that has every family and keeps each family's
// header and sample name.
func newLayout(format int) layout {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := &model.JobView{
		Spec: model.JobSpec{Name: "x", Schedule: schedule.Every(time.Hour), Timeout: time.Minute, StaleMultiple: 2},
		JobState: &model.JobState{
			FirstWatched: t, LastStart: t, LastSuccess: t, LastFailure: t,
			HasLastDuration: true, HasLastExitCode: true,
		},
		History: model.History{DurationHistory: []float64{1}},
		Open:    []model.Run{{Host: "h", PID: 1, Start: t}},
	}
	l := layout{header: make([][]byte, len(families)), prefix: make([]string, len(families)), names: make([]*lineSet, len(families))}
	var r, retired renderer
	r.collect(v, t)
	// The families only a retired job has come from a retired copy of it.
	retiredJob := *v
	retiredJob.JobState = &model.JobState{FirstWatched: t, Retired: t}
	retired.collect(&retiredJob, t)
	for i := range families {
		r := &r
		if len(r.metrics[i]) == 0 {
			r = &retired
		}
		if len(r.metrics[i]) == 0 {
			panic(fmt.Sprintf("collector: no %s in the layout job", families[i].name))
		}
		b := r.encode(i, format)
		for len(b) > 0 && b[0] == '#' {
			n := bytes.IndexByte(b, '\n') + 1
			l.header[i] = append(l.header[i], b[:n]...)
			if typ, ok := bytes.CutPrefix(b[:n], []byte("# TYPE ")); ok {
				l.prefix[i] = string(typ[:bytes.IndexByte(typ, ' ')])
			}
			b = b[n:]
		}
		if l.prefix[i] == "" || !bytes.HasPrefix(b, []byte(l.prefix[i])) {
			panic(fmt.Sprintf("collector: unexpected exposition of %s: %q", families[i].name, r.encode(i, format)))
		}
		l.names[i] = l.lineSet(i, format)
	}
	return l
}

// renderer turns one job view into expfmt's bytes, family by family; its
// buffers are reused from job to job.
type renderer struct {
	metrics [][]*dto.Metric // by family
	pool    []dto.Metric
	used    int
	buf     bytes.Buffer
	mf      dto.MetricFamily
	lines   lineSink
	compact []byte  // the entries of the segment being built, in compact form (see compactLines)
	entries []entry // of the segment being built, by job
}

// collect takes the metrics of v at now, sorted within each family as a
// registry sorts them.
func (r *renderer) collect(v *model.JobView, now time.Time) {
	if r.metrics == nil {
		r.metrics = make([][]*dto.Metric, len(families))
	}
	for i := range r.metrics {
		r.metrics[i] = r.metrics[i][:0]
	}
	r.used = 0
	collectJob(constSink(func(m prometheus.Metric) {
		if r.used == len(r.pool) {
			r.pool = make([]dto.Metric, max(64, 2*len(r.pool)))
			r.used = 0
		}
		d := &r.pool[r.used]
		r.used++
		*d = dto.Metric{}
		if err := m.Write(d); err != nil {
			panic(err) // const metrics of valid descriptors always write
		}
		i := familyOf[m.Desc()]
		r.metrics[i] = append(r.metrics[i], d)
	}), v, now, 0)
	for _, ms := range r.metrics {
		if len(ms) > 1 {
			slices.SortStableFunc(ms, compareMetrics)
		}
	}
}

// compareMetrics orders metrics of a family as client_golang's registry
// does: by label values, in the order of label names.
func compareMetrics(a, b *dto.Metric) int {
	for n := range a.Label {
		if c := strings.Compare(a.Label[n].GetValue(), b.Label[n].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}

// encode returns the exposition of family i of the collected job, header
// included; the bytes are valid until the next call.
func (r *renderer) encode(i, format int) []byte {
	f := &families[i]
	typ := metricType(r.metrics[i][0])
	r.mf = dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &typ, Metric: r.metrics[i]}
	r.buf.Reset()
	var err error
	if format == fmtOpenMetrics {
		_, err = expfmt.MetricFamilyToOpenMetrics(&r.buf, &r.mf, expfmt.WithCreatedLines())
	} else {
		_, err = expfmt.MetricFamilyToText(&r.buf, &r.mf)
	}
	if err != nil {
		panic(fmt.Sprintf("collector: encoding %s: %v", f.name, err)) // valid families always encode
	}
	return r.buf.Bytes()
}

func metricType(m *dto.Metric) dto.MetricType {
	switch {
	case m.Counter != nil:
		return dto.MetricType_COUNTER
	case m.Histogram != nil:
		return dto.MetricType_HISTOGRAM
	}
	return dto.MetricType_GAUGE
}

// entry is one job's exposition in one format, as rendered.
type entry struct {
	// data holds the sample lines of every family; family i's are
	// data[off[i]:off[i+1]].
	data []byte
	off  []uint32
	// label is `{job_name="..."}` as the format writes it.
	label []byte
	// calendar: period and next run depend on the time of the scrape.
	calendar bool
}

// dynamic reports whether family i of a job is computed at scrape time.
func dynamic(i int, calendar bool) bool {
	return i == famSince || i == famStale || i == famBehind || calendar && (i == famPeriod || i == famNext)
}

// calendar reports whether v's period and next run depend on the time of
// the scrape.
func calendar(v *model.JobView) bool {
	switch v.Spec.Schedule.(type) {
	case nil, schedule.Every:
		return false
	}
	return true
}

// render makes e the entry of v, its lines in compact form (see
// compactLines), written by a lineSink; the bytes are in r.compact.
func (r *renderer) render(e *entry, v *model.JobView, format int, now time.Time) {
	tables()
	e.calendar = calendar(v)
	r.lines.reset(format, v.Spec.Name, func(i int) bool { return dynamic(i, e.calendar) })
	collectJob(&r.lines, v, now, 0) // dynamic: written at each scrape
	names := layouts[format].names
	if len(e.off) != len(families)+1 {
		e.off = make([]uint32, len(families)+1)
	}
	start := len(r.compact)
	for i := range families {
		if !r.lines.skip[i] {
			r.compact = r.lines.appendCompact(r.compact, i, names[i])
		}
		e.off[i+1] = uint32(len(r.compact) - start)
	}
	end := len(r.compact)
	r.compact = append(append(r.compact, r.lines.label...), '}')
	e.data = r.compact[start:end:end]
	e.label = r.compact[end:len(r.compact):len(r.compact)]
}

// renderReference makes the entry of v through client_golang and expfmt:
// what render must write (handler_test.go compares them).
func (r *renderer) renderReference(v *model.JobView, format int, now time.Time) *entry {
	tables()
	e := &entry{off: make([]uint32, len(families)+1), calendar: calendar(v)}
	r.collect(v, now)
	l := &layouts[format]
	var data []byte
	for i := range families {
		if len(r.metrics[i]) > 0 && (!dynamic(i, e.calendar) || i == famLabel) {
			b := r.encode(i, format)
			for len(b) > 0 {
				n := bytes.IndexByte(b, '\n') + 1
				line := b[:n]
				b = b[n:]
				if line[0] == '#' {
					continue
				}
				if i == famLabel && e.label == nil {
					rest := line[len(l.prefix[i]):]
					e.label = slices.Clone(rest[:bytes.LastIndexByte(rest, ' ')])
				}
				if !dynamic(i, e.calendar) {
					data = append(data, line...)
				}
			}
		}
		e.off[i+1] = uint32(len(data))
	}
	e.data = data
	return e
}

// segmentJobs is how many jobs, consecutive in name order, a segment
// holds: a change of one job re-renders it and copies the others' bytes.
const segmentJobs = 64

// segment is the cached exposition of consecutive jobs, laid out family by
// family, so that a scrape writes each family of 64 jobs from one piece of
// memory. A segment is never changed once made.
type segment struct {
	views []*model.JobView
	// data[i] holds family i's sample lines of every job in compact form
	// (see compactLines); job k's are data[i][off[i][k]:off[i][k+1]].
	data [][]byte
	off  [][]uint32
	// labels holds each job's `{job_name="..."}`: job k's is
	// labels[loff[k]:loff[k+1]].
	labels []byte
	loff   []uint32
	// calendar[k]: job k's period and next run are computed at scrape
	// time; nil when no job of the segment has a calendar schedule.
	calendar []bool
}

func (s *segment) label(k int) []byte { return s.labels[s.loff[k]:s.loff[k+1]] }

// where is a job's place in the current segments.
type where struct {
	seg *segment
	k   int
}

// cache is the segments of one format for one saved state.
type cache struct {
	format int
	used   time.Time // last scrape of the format
	saved  *model.Saved
	segs   []*segment
	where  map[string]where
	rs     []*renderer // one per goroutine of buildAll
}

// update brings c to saved, rendering the jobs whose views changed, and
// returns the segments in name order.
func (c *cache) update(saved *model.Saved, now time.Time) []*segment {
	if saved == c.saved && c.where != nil {
		return c.segs
	}
	names := saved.JobNames()
	if c.where == nil {
		c.where = make(map[string]where, len(names))
	}
	segs := make([]*segment, (len(names)+segmentJobs-1)/segmentJobs)
	views := make([]*model.JobView, len(names))
	for i, name := range names {
		views[i] = saved.Job(name).Shown() // facts at once (model/facts.go)
	}
	segViews := func(i int) []*model.JobView { return views[i*segmentJobs : min((i+1)*segmentJobs, len(views))] }
	var todo []int // the segments to build
	for i := range segs {
		if i < len(c.segs) && slices.Equal(c.segs[i].views, segViews(i)) {
			segs[i] = c.segs[i]
			continue
		}
		todo = append(todo, i)
	}
	c.buildAll(segs, todo, segViews, now)
	for _, i := range todo {
		for k, v := range segs[i].views {
			c.where[v.Spec.Name] = where{segs[i], k}
		}
	}
	if len(c.where) > len(names) {
		for name := range c.where {
			if saved.Job(name) == nil {
				delete(c.where, name)
			}
		}
	}
	c.saved, c.segs = saved, segs
	return segs
}

// parallelSegments is how many segments to build make it worth another
// goroutine: the first scrape of a format renders every job, 100,000 of
// them in about half a second on one core.
const parallelSegments = 16

// buildAll builds segs[i], of the views segViews(i), for each i of todo:
// on as many cores as there are when there are many segments to build.
// Segments are independent, and builds only read c.where.
func (c *cache) buildAll(segs []*segment, todo []int, segViews func(int) []*model.JobView, now time.Time) {
	workers := max(1, min(runtime.GOMAXPROCS(0), len(todo)/parallelSegments))
	for len(c.rs) < workers {
		c.rs = append(c.rs, new(renderer))
	}
	if workers == 1 {
		for _, i := range todo {
			segs[i] = c.build(c.rs[0], segViews(i), now)
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
				segs[todo[n]] = c.build(c.rs[w], segViews(todo[n]), now)
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

// build makes the segment of views with r: the bytes of a job whose view
// is the one rendered before are copied, the others rendered.
func (c *cache) build(r *renderer, views []*model.JobView, now time.Time) *segment {
	tables()
	nf := len(families)
	r.compact = r.compact[:0]
	if r.entries == nil {
		r.entries = make([]entry, segmentJobs)
	}
	s := &segment{views: views, data: make([][]byte, nf), off: make([][]uint32, nf), loff: make([]uint32, len(views)+1)}
	// Where each job's bytes come from: an old segment or a new entry.
	olds := make([]where, len(views))
	news := make([]*entry, len(views))
	sizes := make([]int, nf)
	labels := 0
	for k, v := range views {
		if w, ok := c.where[v.Spec.Name]; ok && w.seg.views[w.k] == v {
			olds[k] = w
			for i := range sizes {
				sizes[i] += int(w.seg.off[i][w.k+1] - w.seg.off[i][w.k])
			}
			labels += len(w.seg.label(w.k))
			continue
		}
		e := &r.entries[k]
		r.render(e, v, c.format, now)
		news[k] = e
		for i := range sizes {
			sizes[i] += int(e.off[i+1] - e.off[i])
		}
		labels += len(e.label)
	}
	offs := make([]uint32, nf*(len(views)+1))
	for i := range nf {
		s.data[i] = make([]byte, 0, sizes[i])
		s.off[i] = offs[i*(len(views)+1) : i*(len(views)+1)+1 : (i+1)*(len(views)+1)]
	}
	s.labels = make([]byte, 0, labels)
	for k := range views {
		s.appendJob(k, news[k], olds[k])
	}
	return s
}

// appendJob appends job k's bytes to s: those of e, its new entry, or of
// its place in an old segment when e is nil.
func (s *segment) appendJob(k int, e *entry, w where) {
	calendar := false
	if e != nil {
		for i := range s.data {
			s.data[i] = append(s.data[i], e.data[e.off[i]:e.off[i+1]]...)
		}
		s.labels = append(s.labels, e.label...)
		calendar = e.calendar
	} else {
		for i := range s.data {
			s.data[i] = append(s.data[i], w.seg.data[i][w.seg.off[i][w.k]:w.seg.off[i][w.k+1]]...)
		}
		s.labels = append(s.labels, w.seg.label(w.k)...)
		calendar = w.seg.calendar != nil && w.seg.calendar[w.k]
	}
	for i := range s.data {
		s.off[i] = append(s.off[i], uint32(len(s.data[i])))
	}
	s.loff[k+1] = uint32(len(s.labels))
	if calendar {
		if s.calendar == nil {
			s.calendar = make([]bool, len(s.views))
		}
		s.calendar[k] = true
	}
}

// gather is the registry's families and those of saved's sources, merged
// in name order.
func (h *Handler) gather(saved *model.Saved, now time.Time) ([]*dto.MetricFamily, error) {
	sources := prometheus.NewRegistry()
	sources.MustRegister(NewSources(savedFunc(func() *model.Saved { return saved }), func() time.Time { return now }))
	return prometheus.Gatherers{h.gatherer, sources}.Gather()
}

// segments are the jobs' segments in format for saved.
func (h *Handler) segments(saved *model.Saved, format int, now time.Time) []*segment {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.caches[format]
	if c == nil {
		c = &cache{format: format}
		h.caches[format] = c
	}
	c.used = now
	if o := h.caches[1-format]; o != nil && now.Sub(o.used) > cacheIdle {
		h.caches[1-format] = nil
	}
	return c.update(saved, now)
}

// watch is what a scrape computes for one job.
type watch struct {
	since, period, next, behind float64
	stale, hasNext              bool
	retired                     bool // none of the families computed at scrape time
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

// gzipPool's writers compress at gzip.BestSpeed: metrics text is so
// repetitive that it still shrinks about 22× (24× at the default level), in
// a third of the time, which at 50,000 jobs is seconds of a scrape
// (BENCHMARKS.md).
var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	contentType := expfmt.NegotiateAccept(req.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
	var format int
	switch contentType.FormatType() {
	case expfmt.TypeTextPlain:
		format = fmtText
	case expfmt.TypeOpenMetrics:
		format = fmtOpenMetrics
	default:
		h.fallback.ServeHTTP(rsp, req)
		return
	}
	var only map[string]bool // ?name[]=...: those families only, as promhttp does
	if req.URL != nil {
		if names := req.URL.Query()["name[]"]; len(names) > 0 {
			only = make(map[string]bool, len(names))
			for _, n := range names {
				only[n] = true
			}
		}
	}
	// One saved state for the whole scrape: the sources' families and the
	// jobs' are rendered from it, so that a scrape never shows a job's
	// record without its source having counted it.
	var saved *model.Saved
	if h.saved != nil {
		saved = h.saved()
	}
	now := h.now()
	mfs, err := h.gather(saved, now)
	if err != nil {
		if h.errorLog != nil {
			h.errorLog.Println("error gathering metrics:", err)
		}
		h.errCount.WithLabelValues("gathering").Inc()
		http.Error(rsp, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	var segs []*segment
	var srcs []*model.SourceView
	if saved != nil && (only == nil || slices.ContainsFunc(families, func(f family) bool { return only[f.name] })) {
		segs, srcs = h.segments(saved, format, now), saved.Sources()
	}

	hdr := rsp.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(contentType))
	var out io.Writer = rsp
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(rsp)
		defer func() { _ = gz.Close(); gzipPool.Put(gz) }()
		out = gz
	}
	s := scrapePool.Get().(*scrapeMem)
	defer scrapePool.Put(s)
	if err := s.pipeTo(out, func() error { return h.write(s, contentType, format, mfs, segs, srcs, now, only) }); err != nil {
		if h.errorLog != nil {
			h.errorLog.Println("error encoding and sending metric family:", err)
		}
		h.errCount.WithLabelValues("encoding").Inc()
	}
}

// write writes the registry's families mfs and the jobs' families, merged
// in name order, into s; only, when not nil, are the families to write.
func (h *Handler) write(s *scrapeMem, contentType expfmt.Format, format int, mfs []*dto.MetricFamily, segs []*segment, srcs []*model.SourceView, now time.Time, only map[string]bool) error {
	s.watches = s.watches[:0]
	for _, seg := range segs {
		for _, v := range seg.views {
			w := v.Watch(now)
			s.watches = append(s.watches, watch{
				since: w.SinceSuccess.Seconds(), stale: w.Stale, behind: v.DecisionsBehind(srcs, now).Seconds(),
				period: w.Period.Seconds(), next: unix(w.NextRun), hasNext: !w.NextRun.IsZero(),
				retired: !v.Retired.IsZero(),
			})
		}
	}
	enc := expfmt.NewEncoder(s, contentType, expfmt.WithCreatedLines())
	fi := 0
	for _, mf := range mfs {
		for ; fi < len(families) && families[fi].name < mf.GetName(); fi++ {
			if only == nil || only[families[fi].name] {
				s.writeFamily(fi, format, segs)
			}
		}
		if fi < len(families) && families[fi].name == mf.GetName() {
			return fmt.Errorf("metric family %s is both gathered and rendered per job", mf.GetName())
		}
		if only != nil && !only[mf.GetName()] {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	for ; fi < len(families); fi++ {
		if only == nil || only[families[fi].name] {
			s.writeFamily(fi, format, segs)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

// writeFamily writes family i of every job into s; it stops early once a
// write has failed (finish returns the error).
func (s *scrapeMem) writeFamily(i, format int, segs []*segment) {
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
		for k := range seg.views {
			label := seg.label(k)
			if always || cal && seg.calendar[k] {
				w := &s.watches[n*segmentJobs+k]
				if w.retired {
					continue
				}
				var v float64
				switch i {
				case famSince:
					v = w.since
				case famStale:
					v = boolFloat(w.stale)
				case famBehind:
					v = w.behind
				case famPeriod:
					v = w.period
				case famNext:
					if !w.hasNext {
						continue
					}
					v = w.next
				}
				head()
				s.chunk = append(s.chunk, l.prefix[i]...)
				s.chunk = append(s.chunk, label...)
				s.chunk = append(s.chunk, ' ')
				s.chunk = appendFloat(s.chunk, v, format)
				s.chunk = append(s.chunk, '\n')
			} else if b := seg.data[i][seg.off[i][k]:seg.off[i][k+1]]; len(b) > 0 {
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

// acceptsGzip reports whether an Accept-Encoding header takes gzip.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
