package collector

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

const benchJobs = 10000

// manyJobs is a tracker of n jobs, each with a finished run, a failure, a
// skip and one run in progress: every per-job series is present.
func manyJobs(n int, now time.Time) *model.Tracker {
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	specs := make([]model.JobSpec, n)
	for i := range specs {
		specs[i] = model.JobSpec{Name: fmt.Sprintf("job_%05d", i), Schedule: schedule.Every(time.Hour), Timeout: time.Hour, StaleMultiple: 2}
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	var evs []model.Event
	for i := range specs {
		j := specs[i].Name
		evs = append(evs,
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-2 * time.Hour)},
			model.Event{Kind: model.End, Job: j, Host: "web1", PID: i + 1, Time: now.Add(-time.Hour), Result: model.Success, HasExitCode: true},
			model.Event{Kind: model.End, Job: j, Host: "web1", PID: i + 2, Time: now.Add(-time.Minute), Result: model.Failure, ExitCode: 1, HasExitCode: true},
			model.Event{Kind: model.Skip, Job: j, Host: "web1", PID: i + 3, Time: now.Add(-time.Minute)},
			model.Event{Kind: model.Start, Job: j, Host: "web1", PID: i + 4, Time: now.Add(-time.Second)},
		)
	}
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	return tr
}

// plainRegistry holds the same series as the collector renders for
// manyJobs, in client_golang's own metric vectors: the baseline a scrape of
// jobwatch is compared with.
func plainRegistry(tr *model.Tracker, now time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	probe := prometheus.NewRegistry()
	probe.MustRegister(New(tr, func() time.Time { return now }))
	mfs, err := probe.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.Metric[0].Label {
			labels = append(labels, lp.GetName())
		}
		switch mf.GetType().String() {
		case "HISTOGRAM":
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: mf.GetName(), Help: mf.GetHelp(), Buckets: model.DurationBuckets}, labels)
			reg.MustRegister(v)
			for _, m := range mf.Metric {
				v.WithLabelValues(labelValues(m.Label)...).Observe(40)
			}
		case "COUNTER":
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: mf.GetName(), Help: mf.GetHelp()}, labels)
			reg.MustRegister(v)
			for _, m := range mf.Metric {
				v.WithLabelValues(labelValues(m.Label)...).Add(m.Counter.GetValue())
			}
		default:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mf.GetName(), Help: mf.GetHelp()}, labels)
			reg.MustRegister(v)
			for _, m := range mf.Metric {
				v.WithLabelValues(labelValues(m.Label)...).Set(m.Gauge.GetValue())
			}
		}
	}
	return reg
}

func labelValues[T interface{ GetValue() string }](lps []T) []string {
	vs := make([]string, len(lps))
	for i, lp := range lps {
		vs[i] = lp.GetValue()
	}
	return vs
}

func scrape(b *testing.B, g prometheus.Gatherer) {
	b.ReportAllocs()
	var series int
	for b.Loop() {
		mfs, err := g.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		series = 0
		for _, mf := range mfs {
			series += len(mf.Metric)
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(series), "series")
}

// BenchmarkScrape compares a scrape of 10,000 jobs with client_golang
// encoding the same series from a plain registry.
func BenchmarkScrape(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tr := manyJobs(benchJobs, now)
	b.Run("jobwatch", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(New(tr, func() time.Time { return now }))
		scrape(b, reg)
	})
	b.Run("plain_registry", func(b *testing.B) {
		scrape(b, plainRegistry(tr, now))
	})
}

// BenchmarkMemoryPerJob reports the heap the job model holds per job.
func BenchmarkMemoryPerJob(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr := manyJobs(benchJobs, now)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/benchJobs, "heap-bytes/job")
		runtime.KeepAlive(tr)
	}
}

// discardResponse is a ResponseWriter that copies what it is given into a
// buffer of a socket's size, and keeps nothing.
type discardResponse struct {
	h   http.Header
	buf [64 << 10]byte
}

func (d *discardResponse) Header() http.Header { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) {
	for n := 0; n < len(b); n += copy(d.buf[:], b[n:]) {
	}
	return len(b), nil
}
func (d *discardResponse) WriteHeader(int) {}

func serveBench(b *testing.B, h http.Handler, accept string, before func()) {
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", accept)
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if before != nil {
			b.StopTimer()
			before()
			b.StartTimer()
		}
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

// BenchmarkHandler compares a scrape of 10,000 jobs through the Handler
// with today's client_golang handler and with a floor that writes the same
// bytes from memory; "changing" re-renders 100 changed jobs before each
// scrape (the saves of about 200 records a second between two scrapes).
func BenchmarkHandler(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tr := manyJobs(benchJobs, now)
	saved := savedOf(tr)
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	for _, f := range []struct{ name, accept string }{{"text", acceptText}, {"openmetrics", acceptOM}, {"protobuf", acceptProto}} {
		_, body := get(b, cur, f.accept, "")
		b.Run(f.name+"/client_golang", func(b *testing.B) { serveBench(b, old, f.accept, nil) })
		b.Run(f.name+"/handler", func(b *testing.B) { serveBench(b, cur, f.accept, nil) })
		pid := 1 << 20
		b.Run(f.name+"/handler_changing", func(b *testing.B) {
			serveBench(b, cur, f.accept, func() {
				var evs []model.Event
				for i := range 100 {
					pid++
					evs = append(evs, model.Event{Kind: model.Start, Job: fmt.Sprintf("job_%05d", (pid*37+i)%benchJobs), Host: "web2", PID: pid, Time: now})
				}
				tr.Apply(model.Batch{Source: "runs", Events: evs})
				saved = saved.With(tr.Changes())
			})
		})
		b.Run(f.name+"/floor", func(b *testing.B) {
			b.ReportAllocs()
			w := &discardResponse{h: http.Header{}}
			for b.Loop() {
				w.Write(body)
			}
			b.ReportMetric(float64(len(body)), "bytes")
		})
	}
}

// BenchmarkRenderAll renders every job of 10,000, as the first scrape of a
// format does.
func BenchmarkRenderAll(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	saved := savedOf(manyJobs(benchJobs, now))
	for _, f := range []struct {
		name   string
		format int
	}{{"text", fmtText}, {"openmetrics", fmtOpenMetrics}, {"protobuf", fmtProtobuf}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			var segs []*segment
			for b.Loop() {
				c := &cache{format: f.format}
				segs = c.update(saved, now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchJobs, "ns/job")
			// What the cache keeps of what was allocated: the rest is garbage.
			kept := 0
			for _, s := range segs {
				kept += len(s.labels) + 4*len(s.loff)
				for i := range s.data {
					kept += len(s.data[i])
				}
			}
			b.ReportMetric(float64(kept)/benchJobs, "cached-B/job")
		})
	}
}
