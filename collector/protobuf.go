// The jobs' families in the delimited protobuf exposition, the format a
// Prometheus with native histograms asks for: each job's metrics of a
// family are cached as the bytes of MetricFamily's metric field, as
// client_golang marshals them, and a scrape writes a family as one
// message around them.

package collector

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jobwatch/jobwatch/model"
)

// protoHeaders[i] is family i's MetricFamily fields before its metrics
// (name, help, type), made by tables().
var protoHeaders [][]byte

// The field numbers of client_model's messages that the writer writes.
const (
	familyMetricField = 4 // MetricFamily.metric
	metricLabelField  = 1 // Metric.label
	metricGaugeField  = 2 // Metric.gauge
	labelNameField    = 1 // LabelPair.name
	labelValueField   = 2 // LabelPair.value
	gaugeValueField   = 1 // Gauge.value
)

// newProtoHeaders makes protoHeaders from the text layout's TYPE lines.
func newProtoHeaders() [][]byte {
	out := make([][]byte, len(families))
	for i := range families {
		f := &families[i]
		_, typ, _ := strings.Cut(string(layouts[fmtText].header[i]), "# TYPE "+layouts[fmtText].prefix[i]+" ")
		t, ok := dto.MetricType_value[strings.ToUpper(strings.TrimSpace(typ))]
		if !ok {
			panic(fmt.Sprintf("collector: no type for %s in %q", f.name, layouts[fmtText].header[i]))
		}
		b, err := proto.Marshal(&dto.MetricFamily{Name: &f.name, Help: &f.help, Type: dto.MetricType(t).Enum()})
		if err != nil {
			panic(err) // a family of two strings and an enum always marshals
		}
		out[i] = b
	}
	return out
}

// renderProto makes e the entry of v in protobuf: family i's bytes are
// the job's metrics of it, sorted as a registry sorts them, each as
// proto.Marshal writes client_golang's metric in compact form (see
// appendCompactMetric), written by a protoSink; e.label is the job_name
// label field of a metric.
func (r *renderer) renderProto(e *entry, v *model.JobView, now time.Time) {
	tables()
	e.calendar = calendar(v)
	s := &r.proto
	s.reset(e.calendar)
	collectJob(s, v, now, r.opts) // dynamic: written at each scrape
	if len(e.off) != len(families)+1 {
		e.off = make([]uint32, len(families)+1)
	}
	r.label = appendJobLabel(r.label[:0], v.Spec.Name)
	start := len(r.compact)
	for i := range families {
		if !s.skip[i] {
			r.compact = s.appendCompact(r.compact, i)
		}
		e.off[i+1] = uint32(len(r.compact) - start)
	}
	end := len(r.compact)
	r.compact = append(r.compact, r.label...)
	e.data = r.compact[start:end:end]
	e.label = r.compact[end:len(r.compact):len(r.compact)]
}

// appendCompactMetric appends a Metric's bytes m in compact form: the
// cache keeps a metric without its job_name label field, the same in all
// of a job's metrics and most of their bytes, and a scrape writes it back
// (expandMetrics). A varint says the length of what follows, times two,
// plus one when the metric is kept whole (its first label is not
// job_name: a run in progress's host sorts first).
func appendCompactMetric(dst, m, label []byte) []byte {
	if rest, ok := bytes.CutPrefix(m, label); ok {
		dst = protowire.AppendVarint(dst, uint64(len(rest))<<1)
		return append(dst, rest...)
	}
	dst = protowire.AppendVarint(dst, uint64(len(m))<<1|1)
	return append(dst, m...)
}

// expandMetrics appends the metric fields of compact, made by
// appendCompactMetric with label.
func expandMetrics(dst, compact, label []byte) []byte {
	for len(compact) > 0 {
		n, l := protowire.ConsumeVarint(compact)
		size := int(n >> 1)
		m := compact[l : l+size]
		compact = compact[l+size:]
		dst = protowire.AppendTag(dst, familyMetricField, protowire.BytesType)
		if n&1 == 1 {
			dst = protowire.AppendVarint(dst, uint64(size))
		} else {
			dst = protowire.AppendVarint(dst, uint64(len(label)+size))
			dst = append(dst, label...)
		}
		dst = append(dst, m...)
	}
	return dst
}

// appendJobLabel appends a Metric's label field of job_name="name".
func appendJobLabel(b []byte, name string) []byte {
	pair := protowire.SizeTag(labelNameField) + protowire.SizeBytes(len("job_name")) + protowire.SizeTag(labelValueField) + protowire.SizeBytes(len(name))
	b = protowire.AppendTag(b, metricLabelField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(pair))
	b = protowire.AppendTag(b, labelNameField, protowire.BytesType)
	b = protowire.AppendString(b, "job_name")
	b = protowire.AppendTag(b, labelValueField, protowire.BytesType)
	return protowire.AppendString(b, name)
}

// gaugeSize is the size of a Metric's gauge field: a tag, a length and a
// Gauge of one double.
const gaugeSize = 1 + 1 + 1 + 8

// appendGaugeMetric appends the metric field of a gauge whose label field
// is label.
func appendGaugeMetric(b, label []byte, v float64) []byte {
	b = protowire.AppendTag(b, familyMetricField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(label)+gaugeSize))
	b = append(b, label...)
	b = protowire.AppendTag(b, metricGaugeField, protowire.BytesType)
	b = protowire.AppendVarint(b, 1+8)
	b = protowire.AppendTag(b, gaugeValueField, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// writeProtoFamily writes family i of every job into s as one delimited
// MetricFamily, none when no job has it. The family's size is summed
// first, for the message's length, and its metrics then written straight
// into the chunks: a family of 50,000 jobs held whole was 16 MB kept for
// the next scrape.
func (s *scrapeMem) writeProtoFamily(i int, segs []*segment) {
	size := s.protoFamily(i, segs, false)
	if size == 0 {
		return
	}
	s.chunk = protowire.AppendVarint(s.chunk, uint64(len(protoHeaders[i])+size))
	s.chunk = append(s.chunk, protoHeaders[i]...)
	s.protoFamily(i, segs, true)
}

// protoFamily returns the size of family i's metric fields of every job,
// and writes them into s when write.
func (s *scrapeMem) protoFamily(i int, segs []*segment, write bool) int {
	size := 0
	for n, seg := range segs {
		if len(seg.data[i]) == 0 && !(dynamic(i, seg.calendar != nil)) {
			continue
		}
		rest := seg.data[i]
		for k := range seg.ids {
			v, gauge := s.dynamicValue(i, seg, n, k)
			var compact []byte
			compact, rest = nextJob(rest)
			switch {
			case !write && gauge:
				size += gaugeMetricSize(seg.label(k))
			case !write:
				size += expandedSize(compact, seg.label(k))
			case s.failed.Load():
				return size
			case gauge:
				s.chunk = appendGaugeMetric(s.chunk, seg.label(k), v)
			default:
				s.chunk = expandMetrics(s.chunk, compact, seg.label(k))
			}
			if write {
				s.sendFull()
			}
		}
	}
	return size
}

// expandedSize is the size of what expandMetrics appends.
func expandedSize(compact, label []byte) int {
	size := 0
	for len(compact) > 0 {
		n, l := protowire.ConsumeVarint(compact)
		m := int(n >> 1)
		compact = compact[l+m:]
		if n&1 == 0 {
			m += len(label)
		}
		size += protowire.SizeTag(familyMetricField) + protowire.SizeBytes(m)
	}
	return size
}

// gaugeMetricSize is the size of what appendGaugeMetric appends.
func gaugeMetricSize(label []byte) int {
	return protowire.SizeTag(familyMetricField) + protowire.SizeBytes(len(label)+gaugeSize)
}

// The field numbers of the messages a protoSink writes besides those
// above, and their wire types: client_model's metrics.proto.
const (
	metricCounterField   = 3 // Metric.counter
	metricHistogramField = 7 // Metric.histogram
	counterValueField    = 1 // Counter.value
	counterCreatedField  = 3 // Counter.created_timestamp
	timestampSeconds     = 1 // google.protobuf.Timestamp.seconds
	timestampNanos       = 2 // google.protobuf.Timestamp.nanos
	histCountField       = 1 // Histogram.sample_count
	histSumField         = 2 // Histogram.sample_sum
	histBucketField      = 3 // Histogram.bucket
	histSchemaField      = 5 // Histogram.schema (sint32)
	histZeroThreshold    = 6 // Histogram.zero_threshold
	histZeroCount        = 7 // Histogram.zero_count
	histPositiveSpan     = 12
	histPositiveDelta    = 13 // sint64, unpacked (proto2)
	bucketCountField     = 1  // Bucket.cumulative_count
	bucketBoundField     = 2  // Bucket.upper_bound
	spanOffsetField      = 1  // BucketSpan.offset (sint32)
	spanLengthField      = 2  // BucketSpan.length
)

// protoSink renders a job's metrics as the Metric messages proto.Marshal
// writes of client_golang's const metrics (protobuf_test.go compares them
// byte for byte): fields in field-number order, lengths as the shortest
// varints, no exemplar; a counter's created timestamp when it has one; a
// histogram's native fields (schema, zero threshold and count, spans and
// deltas) and its classic buckets when asked for, as durationHistogram
// has them. No const metric, no dto message, no proto.Marshal and no
// garbage per metric: the bytes go into buf, reused from job to job.
type protoSink struct {
	skip    []bool // by family: not cached (computed at scrape time)
	metrics [][]protoMetric
	// unsorted[i]: family i's metrics were not written in a registry's order.
	unsorted []bool
	buf      []byte // the job's metrics, one after the other
	// created is the job's Counter.created_timestamp field: every counter
	// of a job has the same, so it is encoded once per job.
	created      []byte
	createdNanos int64
	hasCreated   bool
	// seq and pos: as lineSink's, the descs of the job before in order.
	seq []*protoDesc
	pos int
}

// protoMetric is one Metric message in protoSink.buf: without its
// job_name label field when that comes first (whole false), as the cache
// keeps it (appendCompactMetric); key is where the values of its other
// labels are, in label-name order, for sorting.
type protoMetric struct {
	msg   span
	key   [maxKeys]span
	whole bool
}

// protoDesc is how a protoSink writes the label fields of one Desc.
type protoDesc struct {
	desc     *prometheus.Desc
	fam      int
	jobFirst bool         // job_name sorts first among the labels
	labels   []protoLabel // in name order
	others   int          // labels but job_name
}

// protoLabel is one label of a Desc: its name, and where its value is in
// the label values collectJob passes.
type protoLabel struct {
	name  string
	value int
	job   bool
}

// protoDescOf is the protoDesc of each job Desc.
var protoDescOf = sync.OnceValue(func() map[*prometheus.Desc]*protoDesc {
	tables()
	out := make(map[*prometheus.Desc]*protoDesc, len(families))
	for i, f := range families {
		m := descInfo[f.desc]
		pd := &protoDesc{desc: f.desc, fam: i}
		for n, k := range labelOrder[f.desc] {
			job := m.labels[k] == "job_name"
			if job {
				pd.jobFirst = n == 0
			} else {
				pd.others++
			}
			pd.labels = append(pd.labels, protoLabel{name: m.labels[k], value: k, job: job})
		}
		if pd.others > maxKeys {
			panic(fmt.Sprintf("collector: %s: a job's family has job_name and at most %d other labels", m.name, maxKeys))
		}
		out[f.desc] = pd
	}
	return out
})

// reset starts the metrics of a job; calendar: its period and next run
// are computed at scrape time, not written.
func (s *protoSink) reset(calendar bool) {
	if s.metrics == nil {
		s.metrics = make([][]protoMetric, len(families))
		s.unsorted = make([]bool, len(families))
		s.skip = make([]bool, len(families))
	}
	for i := range s.metrics {
		s.metrics[i] = s.metrics[i][:0]
		s.unsorted[i] = false
		s.skip[i] = dynamic(i, calendar)
	}
	s.buf = s.buf[:0]
	s.hasCreated = false
	s.pos = 0
}

func (s *protoSink) desc(d *prometheus.Desc) *protoDesc {
	if s.pos < len(s.seq) && s.seq[s.pos].desc == d {
		s.pos++
		return s.seq[s.pos-1]
	}
	pd := protoDescOf()[d]
	s.seq = append(s.seq[:s.pos], pd)
	s.pos++
	return pd
}

// begin starts a Metric of pd in buf with its label fields (but
// job_name's when it comes first), or reports that its family is skipped.
func (s *protoSink) begin(pd *protoDesc, lvs []string) (protoMetric, bool) {
	if s.skip[pd.fam] {
		return protoMetric{}, false
	}
	m := protoMetric{msg: span{start: uint32(len(s.buf))}, whole: !pd.jobFirst}
	n := 0
	for _, l := range pd.labels {
		v := lvs[l.value]
		if l.job && pd.jobFirst {
			continue // the cache leaves it out, a scrape writes it back
		}
		s.buf = appendLabelPair(s.buf, l.name, v)
		if !l.job {
			m.key[n] = span{uint32(len(s.buf) - len(v)), uint32(len(s.buf))}
			n++
		}
	}
	return m, true
}

// end adds m, a metric of pd that ends where buf does, noting whether it
// comes after the metrics before in a registry's order.
func (s *protoSink) end(pd *protoDesc, m protoMetric) {
	m.msg.end = uint32(len(s.buf))
	ms := s.metrics[pd.fam]
	if n := len(ms); n > 0 && pd.others > 0 && s.compareKeys(&m.key, &ms[n-1].key) < 0 {
		s.unsorted[pd.fam] = true
	}
	s.metrics[pd.fam] = append(ms, m)
}

func (s *protoSink) compareKeys(a, b *[maxKeys]span) int {
	for n := range a {
		if c := bytes.Compare(s.buf[a[n].start:a[n].end], s.buf[b[n].start:b[n].end]); c != 0 {
			return c
		}
	}
	return 0
}

// appendLabelPair appends a Metric's label field of name="value".
func appendLabelPair(b []byte, name, value string) []byte {
	pair := protowire.SizeTag(labelNameField) + protowire.SizeBytes(len(name)) + protowire.SizeTag(labelValueField) + protowire.SizeBytes(len(value))
	b = protowire.AppendTag(b, metricLabelField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(pair))
	b = protowire.AppendTag(b, labelNameField, protowire.BytesType)
	b = protowire.AppendString(b, name)
	b = protowire.AppendTag(b, labelValueField, protowire.BytesType)
	return protowire.AppendString(b, value)
}

func appendDouble(b []byte, field protowire.Number, v float64) []byte {
	b = protowire.AppendTag(b, field, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendUvarint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendZigZag(b []byte, field protowire.Number, v int64) []byte {
	return appendUvarint(b, field, protowire.EncodeZigZag(v))
}

func (s *protoSink) gauge(d *prometheus.Desc, v float64, lvs ...string) {
	pd := s.desc(d)
	m, ok := s.begin(pd, lvs)
	if !ok {
		return
	}
	s.buf = protowire.AppendTag(s.buf, metricGaugeField, protowire.BytesType)
	s.buf = protowire.AppendVarint(s.buf, 1+8)
	s.buf = appendDouble(s.buf, gaugeValueField, v)
	s.end(pd, m)
}

func (s *protoSink) counter(d *prometheus.Desc, v float64, created time.Time, lvs ...string) {
	pd := s.desc(d)
	m, ok := s.begin(pd, lvs)
	if !ok {
		return
	}
	size := 1 + 8
	if !created.IsZero() {
		if n := created.UnixNano(); !s.hasCreated || n != s.createdNanos {
			s.created, s.createdNanos, s.hasCreated = appendCreated(s.created[:0], created), n, true
		}
		size += len(s.created)
	}
	s.buf = protowire.AppendTag(s.buf, metricCounterField, protowire.BytesType)
	s.buf = protowire.AppendVarint(s.buf, uint64(size))
	s.buf = appendDouble(s.buf, counterValueField, v)
	if !created.IsZero() {
		s.buf = append(s.buf, s.created...)
	}
	s.end(pd, m)
}

// appendCreated appends a Counter's created_timestamp field of t, as
// timestamppb.New has it (a proto3 message: its zero fields left out).
func appendCreated(b []byte, t time.Time) []byte {
	sec, nanos := t.Unix(), int64(t.Nanosecond())
	size := 0
	if sec != 0 {
		size += 1 + protowire.SizeVarint(uint64(sec))
	}
	if nanos != 0 {
		size += 1 + protowire.SizeVarint(uint64(nanos))
	}
	b = protowire.AppendTag(b, counterCreatedField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if sec != 0 {
		b = appendUvarint(b, timestampSeconds, uint64(sec))
	}
	if nanos != 0 {
		b = appendUvarint(b, timestampNanos, uint64(nanos))
	}
	return b
}

// histogram writes h as newDurationHistogram's metric: count, sum, the
// classic buckets when classic, schema, zero threshold and count, the
// spans and deltas of nativeSpans.
func (s *protoSink) histogram(d *prometheus.Desc, h *model.Histogram, classic bool, lvs ...string) {
	pd := s.desc(d)
	m, ok := s.begin(pd, lvs)
	if !ok {
		return
	}
	s.buf = protowire.AppendTag(s.buf, metricHistogramField, protowire.BytesType)
	at := len(s.buf)
	s.buf = append(s.buf, 0) // the length, one byte if it fits (see endMessage)
	b := appendUvarint(s.buf, histCountField, h.Count)
	b = appendDouble(b, histSumField, h.Sum)
	if classic {
		for ub, n := range h.Buckets() {
			b = protowire.AppendTag(b, histBucketField, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(1+protowire.SizeVarint(n)+1+8))
			b = appendUvarint(b, bucketCountField, n)
			b = appendDouble(b, bucketBoundField, ub)
		}
	}
	b = appendZigZag(b, histSchemaField, model.NativeSchema)
	b = appendDouble(b, histZeroThreshold, model.NativeZeroThreshold)
	b = appendUvarint(b, histZeroCount, h.Zero)
	b = appendNativeSpans(b, h.Native)
	b = appendNativeDeltas(b, h.Native)
	s.buf = endMessage(b, at)
	s.end(pd, m)
}

// endMessage writes the length of the message after b[at], a byte left
// for it, as the shortest varint, moving the message when that takes more
// than the byte.
func endMessage(b []byte, at int) []byte {
	n := len(b) - at - 1
	extra := protowire.SizeVarint(uint64(n)) - 1
	if extra > 0 {
		b = append(b, make([]byte, extra)...)
		copy(b[at+1+extra:], b[at+1:at+1+n])
	}
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

// appendNativeSpans appends the positive_span fields of buckets (sorted by
// key), as nativeSpans makes them: a span per run of keys whose gaps are
// at most two empty buckets.
func appendNativeSpans(b []byte, buckets []model.NativeBucket) []byte {
	var offset int32
	var length uint32
	for i, bk := range buckets {
		gap := int32(0)
		if i > 0 {
			gap = bk.Key - buckets[i-1].Key - 1
		}
		switch {
		case i == 0:
			offset, length = bk.Key, 0
		case gap > 2:
			b = appendSpan(b, offset, length)
			offset, length = gap, 0
		default:
			length += uint32(gap)
		}
		length++
	}
	if len(buckets) > 0 {
		b = appendSpan(b, offset, length)
	}
	return b
}

func appendSpan(b []byte, offset int32, length uint32) []byte {
	zz := protowire.EncodeZigZag(int64(offset))
	b = protowire.AppendTag(b, histPositiveSpan, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(1+protowire.SizeVarint(zz)+1+protowire.SizeVarint(uint64(length))))
	b = appendUvarint(b, spanOffsetField, zz)
	return appendUvarint(b, spanLengthField, uint64(length))
}

// appendNativeDeltas appends the positive_delta fields of buckets, as
// nativeSpans makes them: each count less the one before, the empty
// buckets of a span's small gaps counting 0.
func appendNativeDeltas(b []byte, buckets []model.NativeBucket) []byte {
	var prev int64
	for i, bk := range buckets {
		if i > 0 {
			if gap := bk.Key - buckets[i-1].Key - 1; gap <= 2 {
				for range gap {
					b = appendZigZag(b, histPositiveDelta, -prev)
					prev = 0
				}
			}
		}
		b = appendZigZag(b, histPositiveDelta, int64(bk.Count)-prev)
		prev = int64(bk.Count)
	}
	return b
}

// appendCompact appends family i's metrics, in a registry's order, in
// compact form (see appendCompactMetric).
func (s *protoSink) appendCompact(dst []byte, i int) []byte {
	ms := s.metrics[i]
	if s.unsorted[i] {
		slices.SortStableFunc(ms, func(a, b protoMetric) int { return s.compareKeys(&a.key, &b.key) })
	}
	for _, m := range ms {
		n := uint64(m.msg.end-m.msg.start) << 1
		if m.whole {
			n |= 1
		}
		dst = protowire.AppendVarint(dst, n)
		dst = append(dst, s.buf[m.msg.start:m.msg.end]...)
	}
	return dst
}
