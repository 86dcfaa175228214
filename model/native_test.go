package model

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestNativeBucketsAsClientGolang: a duration falls in the native bucket
// client_golang's own histogram of the same schema puts it in, bounds
// included, and 0 in the zero bucket.
func TestNativeBucketsAsClientGolang(t *testing.T) {
	durations := []float64{0, 0.001, 0.1, 0.5, 1, 1.0905077326652577, 2, 3, 59.9, 60, 61, 3600, 86400, 1e6}
	for k := int32(-80); k < 140; k += 7 {
		durations = append(durations, math.Exp2(float64(k)/8)) // an upper bound exactly
	}
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d", Help: "d", NativeHistogramBucketFactor: 1.1})
	var h Histogram
	for _, d := range durations {
		ref.Observe(d)
		h.Observe(d)
	}
	var m dto.Metric
	if err := ref.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.Histogram.GetSchema(); got != NativeSchema {
		t.Fatalf("client_golang's schema for factor 1.1 is %d, NativeSchema %d", got, NativeSchema)
	}
	want := map[int32]uint64{}
	key, count := int32(0), int64(0)
	deltas := m.Histogram.PositiveDelta
	for _, span := range m.Histogram.PositiveSpan {
		key += span.GetOffset()
		for range span.GetLength() {
			count += deltas[0]
			deltas = deltas[1:]
			if count > 0 {
				want[key] = uint64(count)
			}
			key++
		}
	}
	got := map[int32]uint64{}
	for i, b := range h.Native {
		if i > 0 && h.Native[i-1].Key >= b.Key {
			t.Fatalf("native buckets not sorted by key: %v", h.Native)
		}
		got[b.Key] = b.Count
	}
	if len(got) != len(want) {
		t.Fatalf("native buckets %v, client_golang's %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("bucket %d: %d durations, client_golang %d", k, got[k], n)
		}
	}
	if h.Zero != m.Histogram.GetZeroCount() || h.Count != m.Histogram.GetSampleCount() || h.Sum != m.Histogram.GetSampleSum() {
		t.Errorf("zero %d, count %d, sum %g; client_golang %d, %d, %g", h.Zero, h.Count, h.Sum,
			m.Histogram.GetZeroCount(), m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum())
	}
}
