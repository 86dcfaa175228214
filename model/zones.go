package model

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Times are packed into Unix nanoseconds and a zone index (packTime), so
// that a time comes back as it was made: in the same zone, which the state
// file writes (an RFC 3339 offset) and the status page shows. Zone 0 is
// UTC, 1 Local; others (the fixed zones of parsed offsets) are numbered as
// they come, by name and offset: a parse makes a new *time.Location for
// each time, and a fixed zone of the same name and offset writes the same.
var zones struct {
	mu    sync.Mutex
	byKey map[zoneKey]uint8
	list  atomic.Pointer[[]*time.Location] // index-2; replaced, never changed
}

type zoneKey struct {
	name   string
	offset int
}

var (
	minPacked = time.Unix(0, math.MinInt64)
	maxPacked = time.Unix(0, math.MaxInt64)
)

// packTime is t as Unix nanoseconds and a zone; ok is false when t is
// outside what nanoseconds hold (1678–2262) or the zones are used up.
func packTime(t time.Time) (ns int64, zone uint8, ok bool) {
	if t.Before(minPacked) || t.After(maxPacked) {
		return 0, 0, false
	}
	switch loc := t.Location(); loc {
	case time.UTC:
		zone = 0
	case time.Local:
		zone = 1
	default:
		name, offset := t.Zone()
		if zone, ok = zoneIndex(zoneKey{name, offset}); !ok {
			return 0, 0, false
		}
	}
	return t.UnixNano(), zone, true
}

func zoneIndex(k zoneKey) (uint8, bool) {
	zones.mu.Lock()
	defer zones.mu.Unlock()
	if i, ok := zones.byKey[k]; ok {
		return i, true
	}
	var list []*time.Location
	if p := zones.list.Load(); p != nil {
		list = *p
	}
	if len(list) >= math.MaxUint8-1 {
		return 0, false
	}
	if zones.byKey == nil {
		zones.byKey = map[zoneKey]uint8{}
	}
	next := append(list[:len(list):len(list)], time.FixedZone(k.name, k.offset))
	zones.list.Store(&next)
	i := uint8(len(next) + 1)
	zones.byKey[k] = i
	return i, true
}

func unpackTime(ns int64, zone uint8) time.Time {
	t := time.Unix(0, ns)
	switch zone {
	case 0:
		return t.UTC()
	case 1:
		return t // time.Unix's are Local
	}
	return t.In((*zones.list.Load())[zone-2])
}
