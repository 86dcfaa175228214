package collector

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jobwatch/jobwatch/model"
)

// renderProto writes each metric of a job as proto.Marshal writes
// client_golang's, byte for byte, family by family in a registry's order,
// and keeps them in the compact form appendCompactMetric makes of those.
func TestRenderProtoMatchesMarshal(t *testing.T) {
	tables()
	now := t0.Add(2*time.Hour + 30*time.Minute)
	views := protoTestViews(t, now)
	checkProtoCoverage(t, views)
	for _, v := range views {
		for _, o := range []Options{{}, {ClassicBuckets: true}} {
			t.Run(fmt.Sprintf("%q/classic=%v", v.Spec.Name, o.ClassicBuckets), func(t *testing.T) {
				ref := renderer{opts: o}
				ref.collect(v, now)
				label := appendJobLabel(nil, v.Spec.Name)
				r := renderer{opts: o}
				var got entry
				r.render(&got, v, fmtProtobuf, now)
				if !bytes.Equal(got.label, label) || got.calendar != calendar(v) {
					t.Errorf("label %q calendar %v, want %q %v", got.label, got.calendar, label, calendar(v))
				}
				var compact []byte
				for i := range families {
					var want [][]byte
					if !dynamic(i, calendar(v)) {
						for _, m := range ref.metrics[i] {
							b, err := proto.Marshal(m)
							if err != nil {
								t.Fatal(err)
							}
							want = append(want, b)
							compact = appendCompactMetric(compact, b, label)
						}
					}
					gotMsgs := compactMessages(t, got.data[got.off[i]:got.off[i+1]], label)
					if !slices.EqualFunc(gotMsgs, want, bytes.Equal) {
						t.Errorf("%s:\n%x\n--- proto.Marshal\n%x", families[i].name, gotMsgs, want)
					}
				}
				if !bytes.Equal(got.data, compact) {
					t.Errorf("compact form\n%x\n--- want\n%x", got.data, compact)
				}
			})
		}
	}
}

// protoTestViews are the jobs of everyKind, manyJobs and oddJobs, with
// histograms of several spans and falling counts and special values.
func protoTestViews(t *testing.T, now time.Time) []*model.JobView {
	var views []*model.JobView
	for _, saved := range []*model.Saved{savedOf(everyKind(t, now)), savedOf(manyJobs(5, now)), savedOf(oddJobs(t, now))} {
		for _, name := range saved.JobNames() {
			views = append(views, saved.Job(name))
		}
	}
	with := func(name string, change func(v *model.JobView)) {
		v := *views[0]
		st := *v.JobState // the view's own: the saved one is shared
		v.JobState = &st
		spec := *v.Spec // the view's own: the saved one is shared
		spec.Name = name
		v.Spec = &spec
		change(&v)
		views = append(views, &v)
	}
	with("spans", func(v *model.JobView) {
		v.Durations = model.Histogram{}
		for _, d := range []float64{0, 0.003, 0.004, 0.004, 0.004, 1, 1, 1.2, 60, 61, 61, 61, 3600, 86400 * 3, math.Inf(1)} {
			v.Durations.Observe(d)
		}
		v.Durations.AddNative(model.NativeKey(1), 1<<40) // a count and deltas of several bytes
	})
	with("negative keys", func(v *model.JobView) {
		v.Durations = model.Histogram{}
		for _, d := range []float64{1e-9, 2e-9, 1e-6, 1e-300, 0.5} {
			v.Durations.Observe(d)
		}
	})
	for _, f := range [][3]float64{
		{math.NaN(), math.Inf(1), 1e6}, {math.Inf(-1), math.Copysign(0, -1), -999999}, {0.1, 1e-7, 123456789},
	} {
		with(fmt.Sprintf("special_%v", f), func(v *model.JobView) {
			v.LastDuration, v.HasLastDuration = f[0], true
			v.Durations = model.Histogram{Sum: f[1], Count: 3e6, Counts: slices.Repeat([]uint64{uint64(f[2]) & 0xfffff}, len(model.DurationBuckets)+1)}
			v.LastExitCode, v.HasLastExitCode = int(f[2]), true
		})
	}
	with("created before 1970", func(v *model.JobView) { v.FirstWatched = model.StampOf(time.Unix(-1, 5)) })
	with("created on a second", func(v *model.JobView) { v.FirstWatched = model.StampOf(time.Unix(1e9, 0)) })
	with("no created time", func(v *model.JobView) { v.FirstWatched = model.Stamp{} })
	return views
}

// checkProtoCoverage fails unless views have what the test of
// renderProto is for: a retired job, runs in progress on several hosts,
// a histogram of several spans and a negative delta, counters with a
// created time and without.
func checkProtoCoverage(t *testing.T, views []*model.JobView) {
	t.Helper()
	var retired, hosts, spans, negative, created, uncreated bool
	for _, v := range views {
		retired = retired || !v.Retired.IsZero()
		created = created || !v.FirstWatched.IsZero()
		uncreated = uncreated || v.FirstWatched.IsZero()
		for k := range v.Open {
			hosts = hosts || v.Open[k].Host != v.Open[0].Host
		}
		s, deltas := nativeSpans(v.Durations.Native)
		spans = spans || len(s) > 2
		negative = negative || slices.ContainsFunc(deltas, func(d int64) bool { return d < 0 })
	}
	if !retired || !hosts || !spans || !negative || !created || !uncreated {
		t.Fatalf("views lack a case: retired %v, several hosts %v, spans %v, negative delta %v, created %v, none %v",
			retired, hosts, spans, negative, created, uncreated)
	}
}

// compactMessages are the Metric messages of compact, made by
// appendCompactMetric with label, whole.
func compactMessages(t *testing.T, compact, label []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(compact) > 0 {
		n, l := protowire.ConsumeVarint(compact)
		if l < 0 || int(n>>1) > len(compact)-l {
			t.Fatalf("bad compact metric: %x", compact)
		}
		m := compact[l : l+int(n>>1)]
		compact = compact[l+int(n>>1):]
		if n&1 == 0 {
			m = append(slices.Clip(label), m...)
		}
		out = append(out, m)
	}
	return out
}

// protoSinkMetrics are the Metric messages s holds of family i, whole.
func protoSinkMetrics(t *testing.T, s *protoSink, i int, label []byte) [][]byte {
	t.Helper()
	return compactMessages(t, s.appendCompact(nil, i), label)
}

func marshalMetric(t *testing.T, m prometheus.Metric) []byte {
	t.Helper()
	b, err := proto.Marshal(write(t, m))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A protoSink writes any histogram, gauge and counter as proto.Marshal
// writes client_golang's: durations of every size, counts of every size
// (deltas falling and rising), created times before 1970 and since,
// label values long enough for lengths of two bytes.
func FuzzProtoSink(f *testing.F) {
	f.Add([]byte{}, uint64(0), int64(0), false, 0.0, "j", "h")
	f.Add(durationBytes(0, 0.003, 0.004, 1, 60, 61, 3600, 86400*3), uint64(7), int64(1764496800123456789), true, 1.5, "job", "web1")
	f.Add(durationBytes(1e-9, math.Inf(1), math.NaN(), -1, 5e-324), uint64(1<<63), int64(-1), true, math.NaN(), string(bytes.Repeat([]byte("x"), 200)), "")
	f.Add(durationBytes(1, 1.1, 1.2, 1.3, 2, 2.2, 100), uint64(300), int64(1e9), false, math.Copysign(0, -1), "ü", "ジ")
	f.Fuzz(func(t *testing.T, durations []byte, scale uint64, created int64, classic bool, value float64, name, host string) {
		if !utf8.ValidString(name) || !utf8.ValidString(host) {
			t.Skip("client_golang's const metrics take UTF-8 label values only")
		}
		tables()
		var h model.Histogram
		for b := durations; len(b) >= 9; b = b[9:] {
			d := math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
			h.Observe(d)
			if d > model.NativeZeroThreshold && b[8] > 0 {
				h.AddNative(model.NativeKey(min(d, math.MaxFloat64)), uint64(b[8])*scale)
			}
		}
		h.Count += scale
		createdAt := time.Time{}
		if created != 0 {
			createdAt = time.Unix(0, created)
		}
		lvs := []string{name, host, fmt.Sprint(scale)}
		label := appendJobLabel(nil, name)
		var s protoSink
		s.reset(false)
		s.histogram(durationDesc, &h, classic, lvs[:1]...)
		s.counter(runsDesc, value, createdAt, name, host)
		s.gauge(runStartDesc, value, lvs...)
		s.gauge(lastDurationDesc, value, name)
		var want []prometheus.Metric
		constSink(func(m prometheus.Metric) { want = append(want, m) }).histogram(durationDesc, &h, classic, lvs[:1]...)
		constSink(func(m prometheus.Metric) { want = append(want, m) }).counter(runsDesc, value, createdAt, name, host)
		constSink(func(m prometheus.Metric) { want = append(want, m) }).gauge(runStartDesc, value, lvs...)
		constSink(func(m prometheus.Metric) { want = append(want, m) }).gauge(lastDurationDesc, value, name)
		for _, m := range want {
			got := protoSinkMetrics(t, &s, familyOf[m.Desc()], label)
			if w := marshalMetric(t, m); len(got) != 1 || !bytes.Equal(got[0], w) {
				var d dto.Metric
				_ = proto.Unmarshal(w, &d)
				t.Fatalf("%s:\n%x\n--- proto.Marshal\n%x\n%v", m.Desc(), got, w, &d)
			}
		}
	})
}

// durationBytes are durations as FuzzProtoSink reads them, each counted
// once more in its native bucket.
func durationBytes(ds ...float64) []byte {
	var b []byte
	for _, d := range ds {
		b = protowire.AppendFixed64(b, math.Float64bits(d))
		b = append(b, 1)
	}
	return b
}
