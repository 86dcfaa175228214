// The jobs' families and how each format writes them: the layouts
// taken from expfmt, and the renderer of one job's lines.

package collector

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
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
	famSince, famStale = familyOf[sinceSuccessDesc], familyOf[staleDesc]
	famPeriod, famNext = familyOf[periodDesc], familyOf[nextRunDesc]
	famLabel = familyOf[runningDesc]
	for f := range layouts {
		layouts[f] = newLayout(f)
	}
	descLinesOf = newDescLines()
	protoHeaders = newProtoHeaders()
})

// newLayout renders a job that has every family and keeps each family's
// header and sample name.
func newLayout(format int) layout {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := &model.JobView{
		Spec: &model.JobSpec{Name: "x", Schedule: schedule.Every(time.Hour), Timeout: time.Minute, StaleMultiple: 2},
		JobState: &model.JobState{
			FirstWatched: model.StampOf(t), LastStart: model.StampOf(t), LastSuccess: model.StampOf(t), LastFailure: model.StampOf(t),
			HasLastDuration: true, HasLastExitCode: true,
			// A series per kind appears once it counts: one of each.
			SkipCounts: [4]uint64{1}, LockLostCounts: [2]uint64{1}, DupCounts: [3]uint64{1},
			Overlaps: 1, Missed: 1, Unexpected: 1, ConsecutiveMissed: 1,
			Pauses: &model.Pauses{Unjudged: [3]uint64{1}, PauseEnded: t},
		},
		History: model.History{DurationHistory: []float64{1}},
		Open:    []model.Run{{Host: "h", PID: 1, Start: model.StampOf(t)}},
	}
	l := layout{header: make([][]byte, len(families)), prefix: make([]string, len(families)), names: make([]*lineSet, len(families))}
	var r, retired renderer
	r.collect(v, t)
	// The families only a retired job has come from a retired copy of it.
	retiredJob := *v
	retiredJob.JobState = &model.JobState{FirstWatched: model.StampOf(t), Retired: model.StampOf(t)}
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
	opts    Options
	metrics [][]*dto.Metric // by family
	pool    []dto.Metric
	used    int
	buf     bytes.Buffer
	mf      dto.MetricFamily
	lines   lineSink
	proto   protoSink
	compact []byte  // the entries of the segment being built, in compact form (see compactLines)
	label   []byte  // protobuf: the job's label field (renderProto)
	entries []entry // of the segment being built, by job
	// A segment's build: its jobs' bytes by family and job, an old
	// segment's split into its jobs', and its jobs' labels
	// (cache.build).
	parts, oldParts, labels [][]byte
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
	}), v, now, r.opts)
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
	return i == famSince || i == famStale || calendar && (i == famPeriod || i == famNext)
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
	if format == fmtProtobuf {
		r.renderProto(e, v, now)
		return
	}
	tables()
	e.calendar = calendar(v)
	r.lines.reset(format, v.Spec.Name, func(i int) bool { return dynamic(i, e.calendar) })
	collectJob(&r.lines, v, now, r.opts) // dynamic: written at each scrape
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
