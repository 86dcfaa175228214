package collector

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/jobwatch/jobwatch/model"
)

// A job's duration histogram is what client_golang's const histograms
// write, value for value: its native buckets as a const native histogram
// of them, its classic buckets (when asked for) as a const histogram.
func TestDurationHistogramAsClientGolang(t *testing.T) {
	cases := []struct {
		name      string
		durations []float64
	}{
		{"no runs", nil},
		{"zeros only", []float64{0, 0}},
		{"one run", []float64{42}},
		{"small gaps in one span", []float64{1, 1.2, 1.5, 1.5}},
		{"spans apart", []float64{0, 0.003, 0.004, 1, 60, 61, 3600, 86400 * 3}},
	}
	d := prometheus.NewDesc("jobwatch_job_duration_seconds", "h", []string{"job_name"}, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h model.Histogram
			for _, v := range tc.durations {
				h.Observe(v)
			}
			buckets := map[int]int64{}
			for _, b := range h.Native {
				buckets[int(b.Key)] = int64(b.Count)
			}
			native := write(t, prometheus.MustNewConstNativeHistogram(d, h.Count, h.Sum, buckets, nil, h.Zero, model.NativeSchema, model.NativeZeroThreshold, time.Time{}, "j"))
			native.Histogram.CreatedTimestamp = nil // const native histograms always have one; jobwatch's none, as before
			if got := write(t, newDurationHistogram(d, &h, false, []string{"j"})); !proto.Equal(got, native) {
				t.Errorf("native:\n%v\nclient_golang:\n%v", got, native)
			}
			classic := write(t, prometheus.MustNewConstHistogram(d, h.Count, h.Sum, h.Cumulative(), "j"))
			both := write(t, newDurationHistogram(d, &h, true, []string{"j"}))
			if !proto.Equal(&dto.Histogram{Bucket: both.Histogram.Bucket}, &dto.Histogram{Bucket: classic.Histogram.Bucket}) {
				t.Errorf("classic buckets:\n%v\nclient_golang:\n%v", both.Histogram.Bucket, classic.Histogram.Bucket)
			}
			both.Histogram.Bucket = nil
			if !proto.Equal(both, native) {
				t.Errorf("native part beside the classic buckets:\n%v\nclient_golang:\n%v", both, native)
			}
		})
	}
}

func write(t *testing.T, m prometheus.Metric) *dto.Metric {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}
