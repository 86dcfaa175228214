package collector

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"jobwatch/model"
)

// lineSink writes a job's metrics as the lines of the exposition in one
// format, family by family, as expfmt writes them for client_golang's
// const metrics (handler_test.go compares the two): no const metric, no
// protobuf message and no garbage per sample.
type lineSink struct {
	format int
	fams   [][]byte    // by family: the job's lines
	keys   [][]lineKey // by family, for families of more than one line
	keyBuf []byte
}

// lineKey is where a line is in its family's bytes, and its label values
// in the order of label names, as a registry sorts samples.
type lineKey struct {
	start, end int
	key        string
}

// labelOrder[d] is the order of d's labels by name.
var labelOrder = map[*prometheus.Desc][]int{}

func init() {
	for d, m := range descInfo {
		order := make([]int, len(m.labels))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(m.labels[a], m.labels[b]) })
		labelOrder[d] = order
	}
}

func (s *lineSink) reset() {
	if s.fams == nil {
		s.fams = make([][]byte, len(families))
		s.keys = make([][]lineKey, len(families))
	}
	for i := range s.fams {
		s.fams[i] = s.fams[i][:0]
		s.keys[i] = s.keys[i][:0]
	}
}

// labels appends {a="x",b="y"[,le="v"]} with the labels in name order.
func (s *lineSink) labels(b []byte, d *prometheus.Desc, lvs []string, le []byte) []byte {
	m := descInfo[d]
	b = append(b, '{')
	for n, k := range labelOrder[d] {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, m.labels[k]...)
		b = append(b, '=', '"')
		b = appendEscaped(b, lvs[k])
		b = append(b, '"')
	}
	if le != nil {
		b = append(b, `,le="`...)
		b = append(b, le...)
		b = append(b, '"')
	}
	return append(b, '}', ' ')
}

// sample writes one line of family d (two for a counter with a created
// time in OpenMetrics: its _created sample follows it, as expfmt writes it).
func (s *lineSink) sample(d *prometheus.Desc, v float64, lvs []string, created time.Time) {
	i := familyOf[d]
	start := len(s.fams[i])
	b := append(s.fams[i], descInfo[d].name...)
	b = s.labels(b, d, lvs, nil)
	b = appendFloat(b, v, s.format)
	b = append(b, '\n')
	if s.format == fmtOpenMetrics && !created.IsZero() {
		b = append(b, strings.TrimSuffix(descInfo[d].name, "_total")...)
		b = append(b, "_created"...)
		b = s.labels(b, d, lvs, nil)
		b = appendFloat(b, float64(created.UnixNano())/1e9, s.format)
		b = append(b, '\n')
	}
	s.fams[i] = b
	if len(lvs) > 1 {
		kb := s.keyBuf[:0]
		for _, k := range labelOrder[d] {
			kb = append(kb, lvs[k]...)
			kb = append(kb, 0)
		}
		s.keyBuf = kb
		s.keys[i] = append(s.keys[i], lineKey{start, len(s.fams[i]), string(kb)})
	}
}

func (s *lineSink) gauge(d *prometheus.Desc, v float64, lvs ...string) {
	s.sample(d, v, lvs, time.Time{})
}

func (s *lineSink) counter(d *prometheus.Desc, v float64, created time.Time, lvs ...string) {
	s.sample(d, v, lvs, created)
}

func (s *lineSink) histogram(d *prometheus.Desc, count uint64, sum float64, buckets map[float64]uint64, lvs ...string) {
	i := familyOf[d]
	name := descInfo[d].name
	b := s.fams[i]
	var le []byte
	bounds := make([]float64, 0, len(buckets))
	for ub := range buckets {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	counts := func(b []byte, n uint64) []byte {
		if s.format == fmtOpenMetrics {
			return appendUint(b, n)
		}
		return appendFloat(b, float64(n), fmtText)
	}
	for _, ub := range bounds {
		le = appendFloat(le[:0], ub, s.format)
		b = append(b, name...)
		b = append(b, "_bucket"...)
		b = s.labels(b, d, lvs, le)
		b = append(counts(b, buckets[ub]), '\n')
	}
	if len(bounds) == 0 || bounds[len(bounds)-1] != posInf {
		b = append(b, name...)
		b = append(b, "_bucket"...)
		b = s.labels(b, d, lvs, []byte("+Inf"))
		b = append(counts(b, count), '\n')
	}
	b = append(b, name...)
	b = append(b, "_sum"...)
	b = s.labels(b, d, lvs, nil)
	b = append(appendFloat(b, sum, s.format), '\n')
	b = append(b, name...)
	b = append(b, "_count"...)
	b = s.labels(b, d, lvs, nil)
	s.fams[i] = append(counts(b, count), '\n')
}

// appendSorted appends family i's lines in a registry's order.
func (s *lineSink) appendSorted(out []byte, i int) []byte {
	keys := s.keys[i]
	if len(keys) < 2 {
		return append(out, s.fams[i]...)
	}
	slices.SortStableFunc(keys, func(a, b lineKey) int { return strings.Compare(a.key, b.key) })
	for _, k := range keys {
		out = append(out, s.fams[i][k.start:k.end]...)
	}
	return out
}

// appendEscaped appends a label value as the text formats escape it.
func appendEscaped(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\\\"\n") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendUint(b []byte, n uint64) []byte { return strconv.AppendUint(b, n, 10) }

var posInf = math.Inf(1)

// A segment keeps its lines compact: a job's sample line is its family's
// metric name (one of a few per family: the sample name, and _created,
// _total, _bucket, _sum or _count after it), then the job's label, then
// the rest, and only the rest is stored (without its '\n'), after a byte
// naming the metric name and a byte of the rest's length. At 50,000 jobs
// that keeps about a quarter of the bytes (the names and job labels are
// most of a line); a scrape writes the names and label back, and the
// length spares it a search for the end of each line. A line that does not
// start so (no such name, or a label before job_name), or whose rest is
// longer than a byte can say, is stored whole after the byte verbatim.
const verbatim = 0xff

// repeatCreated, alone, stands for an OpenMetrics _created line with the
// labels of the line before it and the value of the job's previous
// _created line in the family: a counter's _created sample follows it, and
// every counter of a job started counting at the same time.
const repeatCreated = 0xfe

// tagCreated is the tag of the _created name (see lineNames).
const tagCreated = 1

// repeatBucket, then a byte of length and the value, stands for the k-th
// _bucket line of a job's family whose le label is the k-th of
// model.DurationBuckets (then +Inf), as the format writes it.
const repeatBucket = 0xfd

// tagBucket is the tag of the _bucket name (see lineSet).
const tagBucket = 2

// lineSet is what family i's lines start with in one format.
type lineSet struct {
	names []string // the metric names, by tag
	le    []string // `,le="..."} ` of the duration buckets in order, +Inf last
}

// lineSet is family i's lineSet in format.
func (l *layout) lineSet(i, format int) *lineSet {
	base := l.prefix[i]
	// OpenMetrics names a counter's family without _total, its samples with.
	ls := &lineSet{names: []string{base, strings.TrimSuffix(base, "_total") + "_created", base + "_bucket", base + "_sum", base + "_count", base + "_total"}}
	for _, ub := range model.DurationBuckets {
		ls.le = append(ls.le, `,le="`+string(appendFloat(nil, ub, format))+`"} `)
	}
	ls.le = append(ls.le, `,le="+Inf"} `)
	return ls
}

// compactLines appends lines (whole lines of one job and family, each
// ending in '\n') in compact form; label is the job's `{job_name="..."`
// (without the closing brace) and ls the family's.
func compactLines(dst, lines, label []byte, ls *lineSet) []byte {
	var prev, created []byte // the labels of the line before, the value of the last _created line
	buckets := 0             // _bucket lines so far
	for len(lines) > 0 {
		n := bytes.IndexByte(lines, '\n') + 1
		line := lines[:n]
		lines = lines[n:]
		tag, rest := byte(verbatim), line
		if b := bytes.IndexByte(line, '{'); b > 0 {
			if after, ok := bytes.CutPrefix(line[b:], label); ok && len(after) > 0 && len(after) <= 256 && (after[0] == '}' || after[0] == ',') {
				for t, name := range ls.names {
					if string(line[:b]) == name {
						tag, rest = byte(t), after[:len(after)-1]
						break
					}
				}
			}
		}
		if tag == verbatim {
			prev = nil
			dst = append(dst, tag)
			dst = append(dst, rest...)
			continue
		}
		labels, value := splitValue(rest)
		if tag == tagCreated && created != nil && prev != nil && bytes.Equal(labels, prev) && bytes.Equal(value, created) {
			dst = append(dst, repeatCreated)
			continue
		}
		prev = labels
		if tag == tagCreated {
			created = value
		}
		if tag == tagBucket {
			k := buckets
			buckets++
			if k < len(ls.le) && string(labels) == ls.le[k] {
				dst = append(dst, repeatBucket, byte(len(value)))
				dst = append(dst, value...)
				prev = nil // no _created line repeats its labels
				continue
			}
		}
		dst = append(dst, tag, byte(len(rest)))
		dst = append(dst, rest...)
	}
	return dst
}

// splitValue splits the rest of a line after the job's label into the
// labels (up to the space before the value) and the value.
func splitValue(rest []byte) (labels, value []byte) {
	sp := bytes.LastIndexByte(rest, ' ') + 1
	return rest[:sp], rest[sp:]
}

// expandLines appends the whole lines of compact, made by compactLines
// with the same label and lineSet.
func expandLines(dst, compact, label []byte, ls *lineSet) []byte {
	var prev, created []byte // the labels of the line before, the rest of the last _created line
	buckets := 0
	for len(compact) > 0 {
		switch t := compact[0]; t {
		case verbatim:
			n := bytes.IndexByte(compact, '\n') + 1
			dst = append(dst, compact[1:n]...)
			compact = compact[n:]
			prev = nil
		case repeatCreated:
			_, value := splitValue(created)
			dst = append(dst, ls.names[tagCreated]...)
			dst = append(dst, label...)
			dst = append(dst, prev...)
			dst = append(dst, value...)
			dst = append(dst, '\n')
			compact = compact[1:]
		case repeatBucket:
			n := 2 + int(compact[1])
			le := ls.le[buckets]
			buckets++
			dst = append(dst, ls.names[tagBucket]...)
			dst = append(dst, label...)
			dst = append(dst, le...)
			dst = append(dst, compact[2:n]...)
			dst = append(dst, '\n')
			compact = compact[n:]
			prev = nil
		default:
			n := 2 + int(compact[1])
			rest := compact[2:n]
			compact = compact[n:]
			dst = append(dst, ls.names[t]...)
			dst = append(dst, label...)
			dst = append(dst, rest...)
			dst = append(dst, '\n')
			if t == tagCreated || len(compact) > 0 && compact[0] == repeatCreated {
				prev, _ = splitValue(rest)
			}
			if t == tagCreated {
				created = rest
			}
			if t == tagBucket {
				buckets++
			}
		}
	}
	return dst
}
