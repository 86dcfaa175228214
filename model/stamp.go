package model

import (
	"encoding/binary"
	"time"
)

// Stamp is a time packed into 9 bytes rather than time.Time's 24: its Unix
// nanoseconds and its zone (packTime), so that it comes back in the zone
// it was made in, which the state file writes and the status page shows.
// A job's state holds ten times, and a job has up to three copies of its
// state while a catch-up is saved: 160 bytes a copy (BENCHMARKS.md).
//
// A time outside what nanoseconds hold (1678–2262) is kept as the nearest
// one they do (no job ran then), and one in a zone beyond the 254 the
// zones hold comes back in UTC, the same instant.
type Stamp [9]byte

// StampOf is t as a Stamp; the zero time's is the zero Stamp.
func StampOf(t time.Time) Stamp {
	var s Stamp
	if t.IsZero() {
		return s
	}
	switch {
	case t.Before(minPacked):
		t = minPacked
	case t.After(maxPacked):
		t = maxPacked
	}
	ns, zone, ok := packTime(t)
	if !ok { // the zones are used up
		ns, zone = t.UnixNano(), 0
	}
	binary.LittleEndian.PutUint64(s[:8], uint64(ns))
	s[8] = zone + 1
	return s
}

// Time is s as a time.Time.
func (s Stamp) Time() time.Time {
	if s[8] == 0 {
		return time.Time{}
	}
	return unpackTime(int64(binary.LittleEndian.Uint64(s[:8])), s[8]-1)
}

// IsZero reports whether s is the zero time.
func (s Stamp) IsZero() bool { return s[8] == 0 }

// Before reports whether s is before t.
func (s Stamp) Before(t time.Time) bool { return s.Time().Before(t) }

// After reports whether s is after t.
func (s Stamp) After(t time.Time) bool { return s.Time().After(t) }

// Equal reports whether s and t are the same instant.
func (s Stamp) Equal(t time.Time) bool { return s.Time().Equal(t) }
