package model

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// MaxRecentRuns bounds the finished and skipped runs kept per job for the
// status page.
const MaxRecentRuns = 50

// Skipped is the Result of a RecentRun that was skipped.
const Skipped Result = "skipped"

// RecentRunFields are what a RecentRun holds, spelled out: package state
// and the status page read a run through them, and make one from them.
type RecentRunFields struct {
	Start       time.Time // zero when unknown (an end record without start or duration)
	End         time.Time // for a skip: when it was skipped
	Duration    time.Duration
	HasDuration bool
	Result      Result
	Host        string
	PID         int
	ExitCode    int
	HasExitCode bool
	// Reason: why it was skipped, or why it ended early (lock_lost).
	Reason string
	// Lock and Holder: the lock layer that refused a skip and who held it.
	Lock, Holder string
	// Output is the end of what the run printed, when a source had it;
	// OutputRef names it when the source keeps it (Event.OutputRef).
	Output, OutputRef string
	// Overlapped: it started while another run of the job was in progress.
	Overlapped bool
}

// RecentRun is one of a job's latest finished or skipped runs, in 64 bytes
// (a fleet's job keeps MaxRecentRuns of them, and RecentRunFields are 192
// bytes): times as Unix nanoseconds with their zone as a small index, the
// result as a small code, the texts most runs lack behind one pointer.
// Values that do not fit (a time outside 1678–2262, a PID or exit code
// beyond 32 bits, a result jobwatch does not know) are kept whole behind it
// too, so every RecentRunFields comes back as it was made.
type RecentRun struct {
	start, end int64 // Unix nanoseconds; start 0 when not flagged
	dur        time.Duration
	host       string
	more       *recentMore // nil for most runs
	pid, exit  int32
	result     uint8 // resultCodes
	flags      uint8
	zones      [2]uint8 // of start and end (zoneAt)
}

// recentMore is what few runs have.
type recentMore struct {
	reason, lock, holder, output, outputRef string
	wide                                    *recentWide
}

// recentWide holds the values of a run that do not fit its small fields.
type recentWide struct {
	start, end time.Time
	pid, exit  int
	result     Result
}

const (
	rrHasStart uint8 = 1 << iota
	rrHasDuration
	rrHasExitCode
	rrOverlapped
	rrWideStart // start, end, pid, exit, result: in more.wide
	rrWideEnd
	rrWidePID
	rrWideExit
)

// resultCodes are the results a RecentRun holds as a code (its index);
// code 0 is the empty result, and a result not listed is kept whole.
var resultCodes = [...]Result{"", Success, Failure, Timeout, Lost, Skipped}

const wideResult = uint8(len(resultCodes))

// NewRecentRun makes a RecentRun of f.
func NewRecentRun(f RecentRunFields) RecentRun {
	r := RecentRun{dur: f.Duration, host: f.Host, result: wideResult}
	for i, res := range resultCodes {
		if res == f.Result {
			r.result = uint8(i)
			break
		}
	}
	if f.HasDuration {
		r.flags |= rrHasDuration
	}
	if f.HasExitCode {
		r.flags |= rrHasExitCode
	}
	if f.Overlapped {
		r.flags |= rrOverlapped
	}
	var w recentWide
	if !f.Start.IsZero() {
		r.flags |= rrHasStart
		var ok bool
		if r.start, r.zones[0], ok = packTime(f.Start); !ok {
			r.flags |= rrWideStart
			w.start = f.Start
		}
	}
	var ok bool
	if r.end, r.zones[1], ok = packTime(f.End); !ok {
		r.flags |= rrWideEnd
		w.end = f.End
	}
	if r.pid = int32(f.PID); int(r.pid) != f.PID {
		r.flags |= rrWidePID
		w.pid = f.PID
	}
	if r.exit = int32(f.ExitCode); int(r.exit) != f.ExitCode {
		r.flags |= rrWideExit
		w.exit = f.ExitCode
	}
	wide := r.flags&(rrWideStart|rrWideEnd|rrWidePID|rrWideExit) != 0 || r.result == wideResult
	if wide {
		w.result = f.Result
	}
	if f.Reason != "" || f.Lock != "" || f.Holder != "" || f.Output != "" || f.OutputRef != "" || wide {
		r.more = &recentMore{reason: f.Reason, lock: f.Lock, holder: f.Holder, output: f.Output, outputRef: f.OutputRef}
		if wide {
			w := w // a copy on the heap only for a wide run: most are not
			r.more.wide = &w
		}
	}
	return r
}

// Fields spells r out.
func (r RecentRun) Fields() RecentRunFields {
	f := RecentRunFields{Duration: r.dur, Host: r.host, PID: int(r.pid), ExitCode: int(r.exit),
		HasDuration: r.flags&rrHasDuration != 0, HasExitCode: r.flags&rrHasExitCode != 0, Overlapped: r.flags&rrOverlapped != 0}
	var w *recentWide
	if r.more != nil {
		f.Reason, f.Lock, f.Holder, f.Output, f.OutputRef = r.more.reason, r.more.lock, r.more.holder, r.more.output, r.more.outputRef
		w = r.more.wide
	}
	if r.result < wideResult {
		f.Result = resultCodes[r.result]
	} else {
		f.Result = w.result
	}
	switch {
	case r.flags&rrWideStart != 0:
		f.Start = w.start
	case r.flags&rrHasStart != 0:
		f.Start = unpackTime(r.start, r.zones[0])
	}
	if r.flags&rrWideEnd != 0 {
		f.End = w.end
	} else {
		f.End = unpackTime(r.end, r.zones[1])
	}
	if r.flags&rrWidePID != 0 {
		f.PID = w.pid
	}
	if r.flags&rrWideExit != 0 {
		f.ExitCode = w.exit
	}
	return f
}

// Result is how the run ended (Skipped for a skip).
func (r RecentRun) Result() Result {
	if r.result < wideResult {
		return resultCodes[r.result]
	}
	return r.more.wide.result
}

// runHistory holds a job's History, which only views of the job carry
// (see ring).
type runHistory struct {
	recent    ring[RecentRun]
	durations ring[float64]
}

// remember adds r to the job's recent runs.
func (h *runHistory) remember(f RecentRunFields) { h.recent.push(NewRecentRun(f), MaxRecentRuns) }

// RecentRuns are the job's latest finished and skipped runs, oldest first,
// at most MaxRecentRuns.
func (h *History) RecentRuns() []RecentRun { return lastN(h.Recent, MaxRecentRuns) }

// LastDurations are the durations of the job's latest finished runs in
// seconds, oldest first, at most MaxDurationHistory.
func (h *History) LastDurations() []float64 { return lastN(h.DurationHistory, MaxDurationHistory) }

// ring holds a job's latest n values in place: applying a run writes one
// element and copies nothing. Only a view of the job (taken once per save,
// not once per record) copies it out, oldest first, so views never share
// what the ring overwrites.
type ring[T any] struct {
	buf  []T
	next int32 // where the next value goes, once buf is full (int32: a job has three rings)
	// shared: a view holds buf[:len(buf)], which must not be overwritten
	// (appending beyond it is safe: the view does not see that far).
	// Atomic: views are also taken under the tracker's read lock.
	shared atomic.Bool
}

func (r *ring[T]) push(v T, n int) {
	if len(r.buf) < n {
		if len(r.buf) == cap(r.buf) {
			// Grown by half, not doubled: most jobs keep a few runs, and
			// a ring of 200-byte runs is most of a job's memory.
			grown := make([]T, len(r.buf), min(n, len(r.buf)+max(1, len(r.buf)/2)))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, v)
		return
	}
	if r.shared.Load() {
		r.buf = slices.Clone(r.buf)
		r.shared.Store(false)
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % int32(n)
}

// ordered is the values, oldest first (nil when none). Until the ring is
// full they are in order already and are shared with the ring, not
// copied: most jobs have fewer runs than the ring holds, and every saved
// view would otherwise copy them.
func (r *ring[T]) ordered() []T {
	if len(r.buf) == 0 {
		return nil
	}
	if r.next == 0 {
		r.shared.Store(true)
		return r.buf[:len(r.buf):len(r.buf)]
	}
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// load replaces the values with vs, oldest first, keeping the last n.
func (r *ring[T]) load(vs []T, n int) {
	r.buf, r.next = append([]T(nil), lastN(vs, n)...), 0
}

// lastN is the last n elements of s.
func lastN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// MaxDurationHistory bounds the durations kept per job for advice on
// timeouts and lock TTLs: the right timeout is the P99 of real durations
// with a margin, the right lock TTL a multiple of the longest run.
const MaxDurationHistory = 100

// observeDuration adds seconds to the job's duration history.
func (h *runHistory) observeDuration(seconds float64) { h.durations.push(seconds, MaxDurationHistory) }

// DurationQuantile returns the q-quantile (0 < q <= 1) of the durations by
// nearest rank, and false when there are none.
func DurationQuantile(durations []float64, q float64) (float64, bool) {
	if len(durations) == 0 {
		return 0, false
	}
	// Selected, not sorted, in a copy on the stack: every render of a job
	// asks for its P99, and sorting a clone of 100 durations was most of
	// the cost of rendering a fleet's job.
	var buf [MaxDurationHistory]float64
	s := buf[:0]
	if len(durations) > len(buf) {
		s = make([]float64, 0, len(durations))
	}
	s = append(s, durations...)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return nthSmallest(s, min(max(i, 0), len(s)-1)), true
}

// nthSmallest is the k-th smallest of s (from 0), which it reorders:
// Hoare's selection, with the middle element as pivot.
func nthSmallest(s []float64, k int) float64 {
	lo, hi := 0, len(s)-1
	for lo < hi {
		p := s[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for s[i] < p {
				i++
			}
			for s[j] > p {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k]
		}
	}
	return s[k]
}
