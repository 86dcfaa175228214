package locks

import (
	"time"

	"github.com/jobwatch/jobwatch/observation"
)

// Liveness says whether a lock's holder is known to be alive.
type Liveness int8

const (
	// HolderUnknown: not held, or the holder cannot be checked from here.
	HolderUnknown Liveness = iota
	HolderAlive
	HolderDead
)

// State is what a probe saw of one job's lock. Each round's states replace
// the last round's as a whole; they are what is true now and are not
// saved.
type State struct {
	Job  string
	Lock string // the configured path, key or lock name
	Kind string // flock, pidfile, redis or mysql
	Held bool
	// Holder names who holds it: "pid 4242", a Redis value, "conn 17 from
	// 10.0.0.5"; bounded in length by the probe.
	Holder    string
	Alive     Liveness
	HeldSince time.Time // zero when unknown
	// TTL is a Redis key's remaining lease; NoExpiry a held key without one.
	TTL      time.Duration
	HasTTL   bool
	NoExpiry bool
	// ProbeErrors counts probes of this lock that failed since jobwatch
	// started.
	ProbeErrors uint64
}

// lockKind is what the locks source observes besides runs: rendered by the
// collector (docs/locks.md's metrics) and the status page.
var lockKind = observation.Kind{
	Name:  "locks",
	Title: "Locks",
	Key:   "lock",
	Metrics: []observation.Metric{
		{Name: "lock_held", Help: "1 while the job's lock is held (lock: the configured path, key or lock name)."},
		{Name: "lock_holder_alive", Help: "1 when the lock's holder is known to be alive, 0 when known to be dead (a stale lock: every run will skip); absent when not held or unknown."},
		{Name: "lock_held_seconds", Help: "How long the lock has been held: since its holder process started, the lock file was written, or jobwatch first saw it held."},
		{Name: "lock_ttl_seconds", Help: "Remaining lease of a held Redis lock key."},
		{Name: "lock_expires", Help: "For a held Redis lock key: 1 when it has a TTL, 0 when it never expires."},
		{Name: "lock_holder_info", Help: "Who holds the lock (holder: pid 4242, the Redis value, conn 17 from 10.0.0.5); always 1.", Label: "holder"},
		{Name: "lock_probe_errors_total", Help: "Probes of the lock that failed (server down, permission denied) since jobwatch started.", Counter: true},
	},
	Text: `({{.kind}}): {{if .held}}held{{with .holder}} by {{.}}{{end}}{{if no .holder_alive}} <b class="down">who is gone</b>{{end}}` +
		`{{with .held_seconds}} for {{seconds .}}{{end}}{{with .ttl_seconds}}, expires in {{seconds .}}{{end}}{{else}}free{{end}}`,
}

func init() { observation.Register(lockKind) }

// observation is the state as the collector and the status page take it.
func (st *State) observation() observation.Observation {
	o := observation.Observation{Kind: lockKind.Name, Job: st.Job, Key: st.Lock}
	sample := func(metric string, v float64) {
		o.Samples = append(o.Samples, observation.Sample{Metric: metric, Value: v})
	}
	field := func(name string, v any) { o.Fields = append(o.Fields, observation.Field{Name: name, Value: v}) }
	sample("lock_held", boolFloat(st.Held))
	sample("lock_probe_errors_total", float64(st.ProbeErrors))
	field("kind", st.Kind)
	field("held", st.Held)
	if !st.Held {
		field("holder_alive", nil)
		return o
	}
	if st.Holder != "" {
		field("holder", st.Holder)
		o.Samples = append(o.Samples, observation.Sample{Metric: "lock_holder_info", Value: 1, Label: st.Holder})
	}
	switch st.Alive {
	case HolderAlive:
		sample("lock_holder_alive", 1)
		field("holder_alive", true)
	case HolderDead:
		sample("lock_holder_alive", 0)
		field("holder_alive", false)
	default:
		field("holder_alive", nil)
	}
	if !st.HeldSince.IsZero() {
		o.Samples = append(o.Samples, observation.Sample{Metric: "lock_held_seconds", Since: st.HeldSince})
		o.Fields = append(o.Fields, observation.Field{Name: "held_seconds", Since: st.HeldSince})
	}
	if st.HasTTL {
		sample("lock_ttl_seconds", st.TTL.Seconds())
		field("ttl_seconds", st.TTL.Seconds())
	}
	if st.HasTTL || st.NoExpiry {
		sample("lock_expires", boolFloat(st.HasTTL))
	}
	return o
}

// observations are a round's states as the model takes them.
func observations(states []State) []observation.Observation {
	out := make([]observation.Observation, len(states))
	for i := range states {
		out[i] = states[i].observation()
	}
	return out
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
