package model

import (
	"cmp"
	"slices"
	"time"
)

// Other hosts' clocks. Each host's offset from this host's clock is
// estimated from its records' times against the model's now when they are
// read: a record cannot be read before it is written, so one dated ahead
// says the host is at least that far ahead; one dated behind may only have
// taken long to arrive, so it counts for less by its source's late window,
// and only from a batch at its source's end (a live record, not a backlog).
// The estimate is the largest such offset over the last minute or two of a
// host's records. docs/faults.md, "Other hosts' clocks".

const (
	// SkewTolerance: a host whose estimated offset is within it is not
	// shown (jobwatch_host_clock_skew_seconds).
	SkewTolerance = 10 * time.Second
	// MaxSkewSeries bounds the hosts shown: the largest offsets.
	MaxSkewSeries = 100
	// maxSkewHosts bounds the hosts whose offsets are followed; past it the
	// one whose records are the oldest is forgotten.
	maxSkewHosts = 1000
	skewBucket   = time.Minute
)

// hostSkews are other hosts' clocks, by host.
type hostSkews map[string]*hostSkew

// hostSkew is one host's largest offsets in the current minute and the one
// before (set: which of them holds one).
type hostSkew struct {
	bucket    int64 // Unix minutes of the model's now
	cur, prev time.Duration
	set       [2]bool
}

// HostSkew is a host's estimated clock offset: positive when it is ahead.
type HostSkew struct {
	Host   string
	Offset time.Duration
}

// observe takes the record of host dated at, read at now from a source
// with the late window window; live: its batch is at the source's end.
func (s *hostSkews) observe(host string, at, now time.Time, window time.Duration, live bool) {
	d := at.Sub(now)
	if d <= 0 {
		if !live {
			return
		}
		d = min(d+window, 0)
	}
	if *s == nil {
		*s = hostSkews{}
	}
	bucket := now.Unix() / int64(skewBucket/time.Second)
	h := (*s)[host]
	if h == nil {
		if len(*s) >= maxSkewHosts {
			s.forgetOldest()
		}
		h = &hostSkew{bucket: bucket}
		(*s)[host] = h
	}
	switch {
	case bucket == h.bucket:
	case bucket == h.bucket+1:
		h.prev, h.set[1] = h.cur, h.set[0]
		h.set[0] = false
	default:
		h.set = [2]bool{}
	}
	h.bucket = bucket
	if !h.set[0] || d > h.cur {
		h.cur, h.set[0] = d, true
	}
}

// forgetOldest forgets the host whose latest record is the oldest.
func (s *hostSkews) forgetOldest() {
	oldest, at := "", int64(0)
	for host, h := range *s {
		if oldest == "" || h.bucket < at || h.bucket == at && host < oldest {
			oldest, at = host, h.bucket
		}
	}
	delete(*s, oldest)
}

// estimate is the host's offset: the largest of the last two minutes'.
func (h *hostSkew) estimate() time.Duration {
	switch {
	case h.set[0] && h.set[1]:
		return max(h.cur, h.prev)
	case h.set[1]:
		return h.prev
	}
	return h.cur
}

// HostSkews are the hosts whose estimated offsets are beyond
// SkewTolerance, at most MaxSkewSeries of them (the largest), by host.
func (t *Tracker) HostSkews() []HostSkew {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []HostSkew
	for host, h := range t.skews {
		if d := h.estimate(); d > SkewTolerance || d < -SkewTolerance {
			out = append(out, HostSkew{Host: host, Offset: d})
		}
	}
	if len(out) > MaxSkewSeries {
		slices.SortFunc(out, func(a, b HostSkew) int {
			return cmp.Or(cmp.Compare(b.Offset.Abs(), a.Offset.Abs()), cmp.Compare(a.Host, b.Host))
		})
		out = out[:MaxSkewSeries]
	}
	slices.SortFunc(out, func(a, b HostSkew) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// ClockSteps are the steps of this host's clock seen since jobwatch
// started, by ClockDirection.
func (t *Tracker) ClockSteps() [2]uint64 { return t.clock.stepCounts() }
