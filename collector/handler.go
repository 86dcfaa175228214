package collector

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
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
// pointer is the version (kept as a weak pointer, which keeps no view
// alive). A scrape writes the cached bytes of the other jobs, and
// computes the values that depend on the time of the scrape (seconds
// since the last success, staleness, and the period and next run of
// calendar schedules) from each job's model.WatchBasis. The cache is made of
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
	opts     Options

	mu     sync.Mutex // one cache update at a time
	caches [3]*cache  // by format: fmtText, fmtOpenMetrics, fmtProtobuf
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
	Options
}

// NewHandler returns the /metrics handler of o.
func NewHandler(o HandlerOpts) *Handler {
	tables()
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{gatherer: o.Registry, saved: o.Saved, now: o.Now, errorLog: o.ErrorLog, opts: o.Options}
	jobs := prometheus.NewRegistry()
	jobs.MustRegister(New(savedFunc(o.Saved), o.Now, o.Options)) // jobs and sources, from one View
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
	fmtProtobuf // delimited
)

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
		c = &cache{format: format, opts: h.opts}
		h.caches[format] = c
	}
	c.used = now
	for f, o := range h.caches {
		if o != nil && now.Sub(o.used) > cacheIdle {
			h.caches[f] = nil
		}
	}
	return c.update(saved, now)
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
	case expfmt.TypeProtoDelim:
		format = fmtProtobuf
	default: // protobuf as text or compact text, which no Prometheus asks for
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
	if saved != nil && (only == nil || slices.ContainsFunc(families, func(f family) bool { return only[f.name] })) {
		segs = h.segments(saved, format, now)
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
	if err := s.pipeTo(out, func() error { return h.write(s, contentType, format, mfs, segs, now, only) }); err != nil {
		if h.errorLog != nil {
			h.errorLog.Println("error encoding and sending metric family:", err)
		}
		h.errCount.WithLabelValues("encoding").Inc()
	}
}

// write writes the registry's families mfs and the jobs' families, merged
// in name order, into s; only, when not nil, are the families to write.
func (h *Handler) write(s *scrapeMem, contentType expfmt.Format, format int, mfs []*dto.MetricFamily, segs []*segment, now time.Time, only map[string]bool) error {
	s.watches = s.watches[:0]
	for _, seg := range segs {
		for k := range seg.bases {
			b := &seg.bases[k]
			w := b.At(now)
			s.watches = append(s.watches, watch{
				since: sinceSeconds(w, now), stale: w.Stale,
				period: w.Period.Seconds(), next: futureUnix(w.NextRun), hasNext: !w.NextRun.IsZero(),
				retired: b.retired,
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
