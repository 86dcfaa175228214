package collector

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/model"
)

// lineSink renders a job's metrics as the lines of the exposition in one
// format, family by family, as expfmt writes them for client_golang's
// const metrics (handler_test.go compares the two), and appends them in
// compact form (see compactLines): no const metric, no protobuf message,
// no whole line written only to be cut up again, no map and no garbage
// per sample.
type lineSink struct {
	format int
	label  []byte // `{job_name="..."` of the job, escaped
	skip   []bool // by family: not cached (computed at scrape time)
	lines  [][]line
	// unsorted[i]: family i's lines were not written in a registry's order.
	unsorted []bool
	buf      []byte // the labels, values and keys of the job's lines
	// created is the last created time formatted: every counter of a job
	// has the same, so it is formatted once per job.
	created      span
	createdNanos int64
	hasCreated   bool
	// seq is the descLines of the calls of the job before, in order, and
	// pos the call of this job: collectJob calls in the same order from
	// job to job, so most calls find their Desc there, not in a map.
	seq []*descLines
	pos int
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

// span is where bytes are in lineSink.buf.
type span struct{ start, end uint32 }

// line is one rendered line: its name's tag in its family's lineSet, and
// in buf what follows the job's label, split before the value. A line that
// does not start with the job's label (job_name does not sort first among
// its labels) has tag verbatim and its start, name included, in labels.
// It holds no pointer: appending one costs the garbage collector nothing.
type line struct {
	key           [maxKeys]span // label values but job_name's, in label-name order
	labels, value span
	tag           byte
}

// maxKeys is how many labels but job_name a family's lines may have.
const maxKeys = 2

// descLines is how a lineSink writes the lines of one Desc.
type descLines struct {
	desc     *prometheus.Desc
	fam      int
	jobFirst bool     // job_name sorts first among the labels
	others   []int    // the labels but job_name, in name order
	rest     []string // `,name="` of each of others
	order    []int    // all labels in name order, for lines written whole
	whole    []string // `{name="` then `,name="` of each of order
	name     string   // the sample name
	created  string   // the _created sample name of a counter
	bucket   string   // the sample names of a histogram
	sum      string
	count    string
	tags     [2]sampleTags
}

// sampleTags are the tags (see lineSet) of the names of a Desc's lines in
// one format, verbatim for one its lineSet lacks.
type sampleTags struct{ sample, created, bucket, sum, count byte }

// descLinesOf is the descLines of each job Desc, made by tables().
var descLinesOf map[*prometheus.Desc]*descLines

// newDescLines makes descLinesOf; layouts must be made.
func newDescLines() map[*prometheus.Desc]*descLines {
	out := make(map[*prometheus.Desc]*descLines, len(families))
	for i, f := range families {
		m := descInfo[f.desc]
		dl := &descLines{desc: f.desc, fam: i, order: labelOrder[f.desc], name: m.name, created: strings.TrimSuffix(m.name, "_total") + "_created",
			bucket: m.name + "_bucket", sum: m.name + "_sum", count: m.name + "_count"}
		for n, k := range dl.order {
			sep := ","
			if n == 0 {
				sep = "{"
			}
			dl.whole = append(dl.whole, sep+m.labels[k]+`="`)
			if m.labels[k] == "job_name" {
				dl.jobFirst = n == 0
				continue
			}
			dl.others = append(dl.others, k)
			dl.rest = append(dl.rest, ","+m.labels[k]+`="`)
		}
		if len(dl.others) > maxKeys || !slices.Contains(m.labels, "job_name") {
			panic(fmt.Sprintf("collector: %s: a job's family has job_name and at most %d other labels", m.name, maxKeys))
		}
		for format := range dl.tags {
			names := layouts[format].names[i].names
			tag := func(name string) byte {
				if t := slices.Index(names, name); t >= 0 {
					return byte(t)
				}
				return verbatim
			}
			dl.tags[format] = sampleTags{sample: tag(m.name), created: tag(dl.created), bucket: tag(dl.bucket), sum: tag(dl.sum), count: tag(dl.count)}
		}
		out[f.desc] = dl
	}
	return out
}

// reset starts the lines of job name in format; the families for which
// skip is true are not written.
func (s *lineSink) reset(format int, name string, skip func(i int) bool) {
	if s.lines == nil {
		s.lines = make([][]line, len(families))
		s.unsorted = make([]bool, len(families))
		s.skip = make([]bool, len(families))
	}
	s.format = format
	for i := range s.lines {
		s.lines[i] = s.lines[i][:0]
		s.unsorted[i] = false
		s.skip[i] = skip(i)
	}
	s.buf = s.buf[:0]
	s.hasCreated = false
	s.pos = 0
	s.label = appendEscaped(append(s.label[:0], `{job_name="`...), name)
	s.label = append(s.label, '"')
}

func (s *lineSink) descLines(d *prometheus.Desc) *descLines {
	if s.pos < len(s.seq) && s.seq[s.pos].desc == d {
		s.pos++
		return s.seq[s.pos-1]
	}
	dl := descLinesOf[d]
	s.seq = append(s.seq[:s.pos], dl)
	s.pos++
	return dl
}

// appendStart appends what comes before the value of a line of dl whose
// name is name (tag its tag): the labels after the job's, end (`} ` or
// the le label of a bucket and `} `) last; or, when the line does not
// start with the job's label, all of its start, name included.
func (s *lineSink) appendStart(dl *descLines, tag byte, name string, lvs []string, end string) (byte, span) {
	b := s.buf
	start := uint32(len(b))
	if tag != verbatim && dl.jobFirst {
		for n, k := range dl.others {
			b = append(b, dl.rest[n]...)
			b = appendEscaped(b, lvs[k])
			b = append(b, '"')
		}
	} else {
		tag = verbatim
		b = append(b, name...)
		for n, k := range dl.order {
			b = append(b, dl.whole[n]...)
			b = appendEscaped(b, lvs[k])
			b = append(b, '"')
		}
	}
	s.buf = append(b, end...)
	return tag, span{start, uint32(len(s.buf))}
}

// add adds l, a line of dl, noting whether it comes after the lines
// before in a registry's order.
func (s *lineSink) add(dl *descLines, l line) {
	lines := s.lines[dl.fam]
	if n := len(lines); n > 0 && len(dl.others) > 0 && s.compareKeys(&l.key, &lines[n-1].key) < 0 {
		s.unsorted[dl.fam] = true
	}
	s.lines[dl.fam] = append(lines, l)
}

func (s *lineSink) compareKeys(a, b *[maxKeys]span) int {
	for n := range a {
		if c := bytes.Compare(s.buf[a[n].start:a[n].end], s.buf[b[n].start:b[n].end]); c != 0 {
			return c
		}
	}
	return 0
}

// key copies the label values that order dl's lines to buf.
func (s *lineSink) key(dl *descLines, lvs []string) (key [maxKeys]span) {
	for n, k := range dl.others {
		start := uint32(len(s.buf))
		s.buf = append(s.buf, lvs[k]...)
		key[n] = span{start, uint32(len(s.buf))}
	}
	return key
}

func (s *lineSink) value(v float64) span {
	start := uint32(len(s.buf))
	s.buf = appendFloat(s.buf, v, s.format)
	return span{start, uint32(len(s.buf))}
}

// count is a histogram's count as the format writes it.
func (s *lineSink) count(n uint64) span {
	if s.format != fmtOpenMetrics {
		return s.value(float64(n))
	}
	start := uint32(len(s.buf))
	s.buf = appendUint(s.buf, n)
	return span{start, uint32(len(s.buf))}
}

// sample writes one line of d (two for a counter with a created time in
// OpenMetrics: its _created sample follows it, as expfmt writes it).
func (s *lineSink) sample(d *prometheus.Desc, v float64, lvs []string, created time.Time) {
	dl := s.descLines(d)
	if s.skip[dl.fam] {
		return
	}
	tags := &dl.tags[s.format]
	l := line{key: s.key(dl, lvs)}
	l.tag, l.labels = s.appendStart(dl, tags.sample, dl.name, lvs, "} ")
	l.value = s.value(v)
	s.add(dl, l)
	if s.format != fmtOpenMetrics || created.IsZero() {
		return
	}
	if n := created.UnixNano(); !s.hasCreated || n != s.createdNanos {
		s.created, s.createdNanos, s.hasCreated = s.value(float64(n)/1e9), n, true
	}
	c := line{key: l.key, labels: l.labels, value: s.created, tag: tags.created}
	if c.tag == verbatim || l.tag == verbatim {
		c.tag, c.labels = s.appendStart(dl, c.tag, dl.created, lvs, "} ")
	}
	s.add(dl, c)
}

func (s *lineSink) gauge(d *prometheus.Desc, v float64, lvs ...string) {
	s.sample(d, v, lvs, time.Time{})
}

func (s *lineSink) counter(d *prometheus.Desc, v float64, created time.Time, lvs ...string) {
	s.sample(d, v, lvs, created)
}

// histogram writes h's lines: its classic buckets (model.DurationBuckets)
// when classic, else the +Inf bucket alone, as expfmt writes a histogram
// with native buckets only.
func (s *lineSink) histogram(d *prometheus.Desc, h *model.Histogram, classic bool, lvs ...string) {
	dl := s.descLines(d)
	if s.skip[dl.fam] {
		return
	}
	tags := &dl.tags[s.format]
	le := layouts[s.format].names[dl.fam].le
	key := s.key(dl, lvs)
	add := func(tag byte, name, end string) *line {
		l := line{key: key}
		l.tag, l.labels = s.appendStart(dl, tag, name, lvs, end)
		s.add(dl, l)
		return &s.lines[dl.fam][len(s.lines[dl.fam])-1]
	}
	if classic {
		k := 0
		for _, n := range h.Buckets() {
			add(tags.bucket, dl.bucket, le[k]).value = s.count(n)
			k++
		}
	}
	add(tags.bucket, dl.bucket, le[len(le)-1]).value = s.count(h.Count)
	add(tags.sum, dl.sum, "} ").value = s.value(h.Sum)
	add(tags.count, dl.count, "} ").value = s.count(h.Count)
}

// appendCompact appends family i's lines, in a registry's order, in
// compact form; ls is the family's lineSet.
func (s *lineSink) appendCompact(dst []byte, i int, ls *lineSet) []byte {
	lines := s.lines[i]
	if s.unsorted[i] {
		// Stable: a counter's _created line has its key and stays after it.
		slices.SortStableFunc(lines, func(a, b line) int { return s.compareKeys(&a.key, &b.key) })
	}
	var c compactor
	for k := range lines {
		l := &lines[k]
		dst = c.append(dst, l.tag, s.buf[l.labels.start:l.labels.end], s.buf[l.value.start:l.value.end], s.label, ls)
	}
	return dst
}

// appendEscaped appends a label value as the text formats escape it.
func appendEscaped(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\\' || c == '"' || c == '\n' {
			return appendEscapedFrom(append(b, v[:i]...), v[i:])
		}
	}
	return append(b, v...)
}

func appendEscapedFrom(b []byte, v string) []byte {
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
// (without the closing brace) and ls the family's. A lineSink writes the
// same from the lines it renders.
func compactLines(dst, lines, label []byte, ls *lineSet) []byte {
	var c compactor
	for len(lines) > 0 {
		n := bytes.IndexByte(lines, '\n')
		line := lines[:n]
		lines = lines[n+1:]
		tag, rest := byte(verbatim), line
		if b := bytes.IndexByte(line, '{'); b > 0 {
			if after, ok := bytes.CutPrefix(line[b:], label); ok && len(after) > 0 && (after[0] == '}' || after[0] == ',') {
				for t, name := range ls.names {
					if string(line[:b]) == name {
						tag, rest = byte(t), after
						break
					}
				}
			}
		}
		labels, value := splitValue(rest)
		dst = c.append(dst, tag, labels, value, label, ls)
	}
	return dst
}

// compactor writes one family's lines of a job in compact form, one by
// one, remembering what the next lines may repeat.
type compactor struct {
	prev, created       []byte // the labels of the line before, the value of the last _created line
	hasPrev, hasCreated bool
	buckets             int // _bucket lines so far
}

// append appends a line in compact form: its tag, the labels after the
// job's (up to the space before the value) and the value; for a line
// that does not start with its name and the job's label, tag verbatim and
// its start, name included, in labels.
func (c *compactor) append(dst []byte, tag byte, labels, value, label []byte, ls *lineSet) []byte {
	if tag == verbatim || len(labels)+len(value) > 255 {
		c.hasPrev = false
		dst = append(dst, verbatim)
		if tag != verbatim {
			dst = append(dst, ls.names[tag]...)
			dst = append(dst, label...)
		}
		dst = append(dst, labels...)
		dst = append(dst, value...)
		return append(dst, '\n')
	}
	if tag == tagCreated && c.hasCreated && c.hasPrev && bytes.Equal(labels, c.prev) && bytes.Equal(value, c.created) {
		return append(dst, repeatCreated)
	}
	c.prev, c.hasPrev = labels, true
	if tag == tagCreated {
		c.created, c.hasCreated = value, true
	}
	if tag == tagBucket {
		k := c.buckets
		c.buckets++
		if k < len(ls.le) && string(labels) == ls.le[k] {
			dst = append(dst, repeatBucket, byte(len(value)))
			c.hasPrev = false // no _created line repeats its labels
			return append(dst, value...)
		}
	}
	dst = append(dst, tag, byte(len(labels)+len(value)))
	dst = append(dst, labels...)
	return append(dst, value...)
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
