package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobwatch/jobwatch/model"
)

// durationHistogram is a job's jobwatch_job_duration_seconds as
// client_golang's own histograms write it: its native buckets, and its
// classic ones too when they are asked for (a const histogram of
// client_golang has one kind or the other, never both).
type durationHistogram struct {
	desc   *prometheus.Desc
	h      dto.Histogram
	labels []*dto.LabelPair
}

var _ prometheus.Metric = (*durationHistogram)(nil)

func (m *durationHistogram) Desc() *prometheus.Desc { return m.desc }

func (m *durationHistogram) Write(out *dto.Metric) error {
	out.Histogram = &m.h
	out.Label = m.labels
	return nil
}

// newDurationHistogram is the metric of h.
func newDurationHistogram(d *prometheus.Desc, h *model.Histogram, classic bool, lvs []string) *durationHistogram {
	m := &durationHistogram{desc: d, labels: prometheus.MakeLabelPairs(d, lvs)}
	m.h.SampleCount, m.h.SampleSum = new(h.Count), new(h.Sum)
	m.h.Schema, m.h.ZeroThreshold, m.h.ZeroCount = new(int32(model.NativeSchema)), new(model.NativeZeroThreshold), new(h.Zero)
	if classic {
		m.h.Bucket = make([]*dto.Bucket, 0, len(model.DurationBuckets))
		for ub, n := range h.Buckets() {
			m.h.Bucket = append(m.h.Bucket, &dto.Bucket{UpperBound: new(ub), CumulativeCount: new(n)})
		}
	}
	m.h.PositiveSpan, m.h.PositiveDelta = nativeSpans(h.Native)
	return m
}

// nativeSpans are the spans and deltas of buckets, sorted by key, as the
// protobuf exposition has them: a span per run of consecutive keys (a gap
// of one or two empty buckets is cheaper as zero deltas, as client_golang
// writes them), each count as the difference from the one before.
func nativeSpans(buckets []model.NativeBucket) ([]*dto.BucketSpan, []int64) {
	if len(buckets) == 0 {
		return nil, nil
	}
	var spans []*dto.BucketSpan
	deltas := make([]int64, 0, len(buckets))
	var prevKey int32
	var prevCount int64
	for i, b := range buckets {
		gap := b.Key - prevKey - 1
		switch {
		case i == 0:
			spans = append(spans, &dto.BucketSpan{Offset: new(b.Key), Length: new(uint32(0))})
		case gap > 2:
			spans = append(spans, &dto.BucketSpan{Offset: new(gap), Length: new(uint32(0))})
		default:
			for range gap {
				deltas = append(deltas, -prevCount)
				prevCount = 0
				*spans[len(spans)-1].Length++
			}
		}
		deltas = append(deltas, int64(b.Count)-prevCount)
		*spans[len(spans)-1].Length++
		prevKey, prevCount = b.Key, int64(b.Count)
	}
	return spans, deltas
}
