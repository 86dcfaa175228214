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
	"strings"
	"time"

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
// client_golang marshals it in compact form (see appendCompactMetric);
// e.label is the job_name label field of a metric.
func (r *renderer) renderProto(e *entry, v *model.JobView, now time.Time) {
	tables()
	e.calendar = calendar(v)
	r.collect(v, now)
	if len(e.off) != len(families)+1 {
		e.off = make([]uint32, len(families)+1)
	}
	r.label = appendJobLabel(r.label[:0], v.Spec.Name)
	start := len(r.compact)
	for i := range families {
		if !dynamic(i, e.calendar) {
			for _, m := range r.metrics[i] {
				var err error
				if r.pb, err = (proto.MarshalOptions{}).MarshalAppend(r.pb[:0], m); err != nil {
					panic(err) // const metrics always marshal
				}
				r.compact = appendCompactMetric(r.compact, r.pb, r.label)
			}
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
// MetricFamily, none when no job has it. The family's metrics are written
// back into s.family first, for the message's length.
func (s *scrapeMem) writeProtoFamily(i int, segs []*segment) {
	s.family = s.family[:0]
	for n, seg := range segs {
		if len(seg.data[i]) == 0 && !(dynamic(i, seg.calendar != nil)) {
			continue
		}
		for k := range seg.views {
			if v, ok := s.dynamicValue(i, seg, n, k); ok {
				s.family = appendGaugeMetric(s.family, seg.label(k), v)
			} else {
				s.family = expandMetrics(s.family, seg.data[i][seg.off[i][k]:seg.off[i][k+1]], seg.label(k))
			}
		}
	}
	if len(s.family) == 0 {
		return
	}
	s.chunk = protowire.AppendVarint(s.chunk, uint64(len(protoHeaders[i])+len(s.family)))
	s.chunk = append(s.chunk, protoHeaders[i]...)
	for b := s.family; len(b) > 0 && !s.failed.Load(); {
		n := min(len(b), 64<<10)
		s.chunk = append(s.chunk, b[:n]...)
		b = b[n:]
		s.sendFull()
	}
}
