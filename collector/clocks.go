package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/model"
)

// Clocks renders what the model knows of clocks: the steps of this host's
// clock and the other hosts' offsets (model/clocks.go, model/hostskew.go).
// They are not saved: a restart starts them again.
type Clocks struct{ m ClockViewer }

// ClockViewer is what Clocks renders; *model.Tracker is one.
type ClockViewer interface {
	ClockSteps() [2]uint64
	HostSkews() []model.HostSkew
}

var (
	clockStepsDesc = desc("clock_steps_total", "Steps of this host's wall clock jobwatch has seen since it started (the wall clock moving by a second or more against the monotonic clock), by direction: forward or backward.", "direction")
	hostSkewDesc   = desc("host_clock_skew_seconds", "Estimated offset of a host's clock from this host's, from its records' times against when they were read: positive when it is ahead. Only hosts more than 10 s off, at most 100 (the largest offsets).", "host")
)

var _ prometheus.Collector = Clocks{}

// NewClocks returns the collector of m's clocks.
func NewClocks(m ClockViewer) Clocks { return Clocks{m} }

// Describe implements prometheus.Collector.
func (Clocks) Describe(ch chan<- *prometheus.Desc) {
	ch <- clockStepsDesc
	ch <- hostSkewDesc
}

// Collect implements prometheus.Collector.
func (c Clocks) Collect(ch chan<- prometheus.Metric) {
	steps := c.m.ClockSteps()
	for i, dir := range model.ClockDirection {
		ch <- prometheus.MustNewConstMetric(clockStepsDesc, prometheus.CounterValue, float64(steps[i]), dir)
	}
	for _, s := range c.m.HostSkews() {
		ch <- prometheus.MustNewConstMetric(hostSkewDesc, prometheus.GaugeValue, s.Offset.Seconds(), s.Host)
	}
}
