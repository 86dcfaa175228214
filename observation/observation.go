// Package observation is how a source reports what it sees besides runs
// (lock states, for the locks source): a source package registers the Kind
// of what it observes, with the metrics and the status line of each
// observation, and hands Observations over with its batches; the model
// keeps a source's latest ones, and the collector and the status page
// render every registered kind without naming a source. It imports
// nothing of jobwatch, so that sources, the model and the renderers can
// all use it.
package observation

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Kind is a kind of observation: its name, how the collector exports each
// observation of it, and how the status page shows one.
type Kind struct {
	// Name is the kind's key in the status report's JSON ("locks").
	Name string
	// Title heads the kind's list on a job's status page ("Locks").
	Title string
	// Key is the label that names an observation within its job ("lock"),
	// beside job_name.
	Key string
	// Metrics are what each observation may export.
	Metrics []Metric
	// Text is an html/template of one observation's line on a job's status
	// page, executed on its fields by name (.held, .holder); the function
	// "seconds" writes a number of seconds as Prometheus writes durations.
	// The observation's key is shown before it.
	Text string
}

// Metric is one metric of a kind: jobwatch_<Name>{job_name, <Key>} and,
// when Label is set, one more label whose value each sample gives.
type Metric struct {
	Name    string
	Help    string
	Counter bool
	Label   string
}

// Observation is what a source saw of one thing of a job (a lock) at its
// latest probe. Observations are what is true now: they are not saved.
type Observation struct {
	Kind string
	Job  string
	Key  string // the value of the kind's Key label: the lock's path or name
	// Samples are the observation's metric values; a metric of its kind
	// with no sample is absent.
	Samples []Sample
	// Fields are what the status report shows of it, in order.
	Fields []Field
}

// Sample is one metric value of an observation.
type Sample struct {
	Metric string // a Metric.Name of its kind
	Value  float64
	// Since, when set, makes the value the seconds from it to the scrape
	// (never below 0), computed then.
	Since time.Time
	// Label is the value of the metric's extra label.
	Label string
}

// Field is one field of an observation in the status report: a string, a
// bool, a number or nil (JSON null), or, when Since is set, the seconds
// from it to the report.
type Field struct {
	Name  string
	Value any
	Since time.Time
}

// At is the field's value at now.
func (f Field) At(now time.Time) any {
	if !f.Since.IsZero() {
		return SecondsSince(f.Since, now)
	}
	return f.Value
}

// At is the sample's value at now.
func (s Sample) At(now time.Time) float64 {
	if !s.Since.IsZero() {
		return SecondsSince(s.Since, now)
	}
	return s.Value
}

// SecondsSince is the seconds from t to now, never below 0.
func SecondsSince(t, now time.Time) float64 { return max(now.Sub(t).Seconds(), 0) }

// Equal reports whether two lists of observations say the same.
func Equal(a, b []Observation) bool { return reflect.DeepEqual(a, b) }

var (
	mu    sync.RWMutex
	kinds []*Kind
)

// Register makes a kind of observation known to the renderers. A source
// package calls it from its init function, beside sources.Register; a kind
// registered twice, or a metric name that another kind has, panics.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	for _, o := range kinds {
		if o.Name == k.Name {
			panic(fmt.Sprintf("observation kind %q registered twice", k.Name))
		}
		for _, m := range k.Metrics {
			if o.Metric(m.Name) != nil {
				panic(fmt.Sprintf("metric %q of observation kind %q is also one of %q", m.Name, k.Name, o.Name))
			}
		}
	}
	kinds = append(kinds, &k)
	slices.SortFunc(kinds, func(a, b *Kind) int { return cmp.Compare(a.Name, b.Name) })
}

// Kinds are the registered kinds, by name.
func Kinds() []*Kind {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(kinds)
}

// Lookup is the registered kind of that name, or nil.
func Lookup(name string) *Kind {
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Metric is the kind's metric of that name, or nil.
func (k *Kind) Metric(name string) *Metric {
	for i := range k.Metrics {
		if k.Metrics[i].Name == name {
			return &k.Metrics[i]
		}
	}
	return nil
}
