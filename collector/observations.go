package collector

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/observation"
)

// observationDescs are the descriptors of every registered kind of
// observation's metrics, by kind and metric name; built at first use,
// once the source packages have registered their kinds.
var observationDescs = sync.OnceValue(func() map[string]map[string]*prometheus.Desc {
	out := map[string]map[string]*prometheus.Desc{}
	for _, k := range observation.Kinds() {
		out[k.Name] = map[string]*prometheus.Desc{}
		for _, m := range k.Metrics {
			labels := []string{"job_name", k.Key}
			if m.Label != "" {
				labels = append(labels, m.Label)
			}
			out[k.Name][m.Name] = prometheus.NewDesc(prometheus.BuildFQName(namespace, "", m.Name), m.Help, labels, nil)
		}
	}
	return out
})

func describeObservations(ch chan<- *prometheus.Desc) {
	for _, k := range observation.Kinds() { // in order: the map's is not
		for _, m := range k.Metrics {
			ch <- observationDescs()[k.Name][m.Name]
		}
	}
}

// collectObservations renders a source's latest observations; one of a
// kind or metric not registered (none: sources register what they make)
// is left out.
func collectObservations(ch chan<- prometheus.Metric, s *model.SourceView, now time.Time) {
	descs := observationDescs()
	for i := range s.Observations {
		o := &s.Observations[i]
		kind := observation.Lookup(o.Kind)
		for _, smp := range o.Samples {
			d := descs[o.Kind][smp.Metric]
			if d == nil {
				continue
			}
			m := kind.Metric(smp.Metric)
			vt, labels := prometheus.GaugeValue, []string{o.Job, o.Key}
			if m.Counter {
				vt = prometheus.CounterValue
			}
			if m.Label != "" {
				labels = append(labels, smp.Label)
			}
			v := smp.At(now)
			if !smp.Since.IsZero() {
				v = secondsSince(smp.Since, now) // in whole seconds, as a job's
			}
			ch <- prometheus.MustNewConstMetric(d, vt, v, labels...)
		}
	}
}
