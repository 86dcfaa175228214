package model

import "time"

// Liveness says whether a lock's holder is known to be alive.
type Liveness int8

const (
	// HolderUnknown: not held, or the holder cannot be checked from here.
	HolderUnknown Liveness = iota
	HolderAlive
	HolderDead
)

// LockState is what a lock probe saw of one job's lock. Probes replace a
// source's lock states as a whole with every batch that carries them; lock
// states are what is true now and are not saved.
type LockState struct {
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
