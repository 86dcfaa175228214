package model

import (
	"encoding/json"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"time"
)

// JobState is what jobwatch knows of one job. package state saves it in a
// format of its own (docs/state.md); the model's types carry no file format.
// A job and its latest view share one JobState, which the job copies
// before it next changes (job.own): a saved view is never written.
type JobState struct {
	// The times are Stamps, and together with the flags: a JobState then
	// fits 480 bytes (a size class) rather than 640, and a job has up to
	// three of them while a catch-up is saved.

	// FirstWatched is when jobwatch started watching the job, or the time of
	// its earliest record if that is earlier (history read on first start):
	// the reference for staleness until a success is seen.
	FirstWatched     Stamp
	LastStart        Stamp
	LastSuccess      Stamp
	LastSuccessStart Stamp
	LastFailure      Stamp
	// LastUnknown and LastUnknownStart: the end and start of the latest
	// run whose result is Unknown (a cron job at -L 1). The job ran:
	// staleness counts from it as from a success (Watch).
	LastUnknown      Stamp
	LastUnknownStart Stamp
	// SlotsCheckedUntil: every expected run up to here has been counted as
	// run or missed.
	SlotsCheckedUntil Stamp
	// Retired is when the discovered job disappeared from the host: it is
	// expected no more, its history kept (zero while it is watched).
	Retired Stamp
	// Resumed is when a retired job came back: its staleness counts from
	// then at the earliest, not from a success before it was retired.
	Resumed         Stamp
	HasLastDuration bool
	HasLastExitCode bool
	// Discovered: the job is one host mode found (JobSpec.Discovered), so
	// it is retired, not dropped, when it disappears, even while jobwatch
	// was stopped.
	Discovered bool

	LastDuration float64
	LastExitCode int

	ConsecutiveFailures uint64
	ConsecutiveSkips    uint64
	// ConsecutiveMissed are the expected runs since the last run that
	// started, or skip, in a slot, that had no run within grace
	// (calendar schedules only).
	ConsecutiveMissed uint64
	// RunCounts are the finished runs by result, in the order of Results.
	RunCounts [6]uint64
	Skips     uint64
	// SkipCounts count the skips by their SkipLabel, in the order of
	// SkipReasons, and SkipsDeclared by the labels a runlog source's
	// patterns declare (nil until one is counted); together they add up to
	// Skips (a state saved before reasons were counted holds the
	// difference under SkipOther). See AddSkips and SkipsByReason.
	SkipCounts    [4]uint64
	SkipsDeclared map[string]uint64
	// LockLostCounts count the shared locks runs lost, by layer, in the
	// order of LockLayers.
	LockLostCounts [2]uint64
	Overlaps       uint64
	Durations      Histogram
	// LostRuns are the keys of the latest runs closed as lost.
	LostRuns []RunKey

	// Slot accounting, for calendar schedules.
	Missed     uint64
	Unexpected uint64
	// DupCounts are the duplicate runs by kind, in the order of
	// DuplicateKinds.
	DupCounts   [3]uint64
	RecentSlots []SlotRuns
	// Sources that reported the job: missed runs are not counted from the
	// clock while one of them cannot be read.
	Sources []string
	// LockTTL is the shared lock's lease named by the latest start record
	// that named one (jobwatch run --lock-redis); 0 when none has.
	LockTTL time.Duration
	// Pauses: the job's pause in force and what pauses left unjudged
	// (pause.go); nil while it has none, as most jobs: the Pauses were a
	// fifth of a JobState's bytes.
	Pauses *Pauses
}

// History is a job's latest runs and durations: Recent are the latest
// finished and skipped runs, oldest first, at most MaxRecentRuns;
// DurationHistory the latest finished runs' durations in seconds, at most
// MaxDurationHistory. A view of the job carries them; the live job keeps
// them in rings (see ring).
type History struct {
	Recent          []RecentRun
	DurationHistory []float64
}

// cloneSharingDurations is a deep copy of j but for the histogram's
// buckets, which the copy shares with j until it observes a duration
// (job.finish, or a fact's: the scratch job of JobView.withFacts):
// a job copies its state at its first change after each save, and most
// changes (a start, a held record's decision, a skip) observe none; the
// buckets were a sixth of a copy's bytes.
func (j *JobState) cloneSharingDurations() *JobState {
	c := *j
	c.SkipsDeclared = maps.Clone(j.SkipsDeclared)
	c.LostRuns = slices.Clone(j.LostRuns)
	c.Sources = slices.Clone(j.Sources)
	c.Pauses = j.Pauses.clone()
	if j.RecentSlots != nil {
		c.RecentSlots = make([]SlotRuns, len(j.RecentSlots))
		for i, rs := range j.RecentSlots {
			c.RecentSlots[i] = SlotRuns{Slot: rs.Slot, Hosts: slices.Clone(rs.Hosts)}
		}
	}
	return &c
}

// takeStart takes the start ev as the latest when none later was seen,
// and its lease as the lease configured now.
func (j *JobState) takeStart(ev *Event) {
	if ev.LockTTL > 0 && !j.LastStart.After(ev.Time) {
		j.LockTTL = ev.LockTTL
	}
	if j.LastStart.Before(ev.Time) {
		j.LastStart = StampOf(ev.Time)
	}
}

// AddSkips counts n skips under label.
func (j *JobState) AddSkips(label string, n uint64) {
	if i := slices.Index(SkipReasons, label); i >= 0 {
		j.SkipCounts[i] += n
		return
	}
	if j.SkipsDeclared == nil {
		j.SkipsDeclared = map[string]uint64{}
	}
	j.SkipsDeclared[label] += n
}

// SkipsByReason are the skips by label, of the labels counted (nil: none).
func (j *JobState) SkipsByReason() map[string]uint64 {
	return countsOf(SkipReasons, j.SkipCounts[:], j.SkipsDeclared)
}

// LockLost are the locks lost by layer, of the layers that lost one (nil:
// none).
func (j *JobState) LockLost() map[string]uint64 {
	return countsOf(LockLayers, j.LockLostCounts[:], nil)
}

// countsOf is the non-zero counts of names and of more, by name.
func countsOf(names []string, counts []uint64, more map[string]uint64) map[string]uint64 {
	return CountsInto(nil, names, counts, more)
}

// CountsInto puts the non-zero counts of names and of more into m (which
// may be nil: made when one is non-zero), by name, as SkipsByReason and
// LockLost have them; the saver fills one record's maps again and again.
func CountsInto(m map[string]uint64, names []string, counts []uint64, more map[string]uint64) map[string]uint64 {
	add := func(name string, n uint64) {
		if n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[name] = n
		}
	}
	for i, n := range counts {
		add(names[i], n)
	}
	for name, n := range more {
		add(name, n)
	}
	return m
}

// Run is a run in progress.
type Run struct {
	// RunID, Host and PID identify it (Key).
	RunID  string
	Host   string
	PID    int
	Source string
	// Lease is the shared lock's lease its start record named (jobwatch
	// run --lock-redis): while the run lives, no other run of the job
	// starts.
	Lease time.Duration
	// readLate: when it was read, for a start read after its job had
	// decided past its time, or restored from the state; not saved.
	readLate int64 // Unix nanoseconds: a Run a start, kept small
	// The times are Stamps, together with the flags, so that a Run fits
	// 112 bytes (a size class) rather than 160: a job and its view each
	// hold its runs in progress.
	Start Stamp
	// Slot is the expected run it belongs to (calendar schedules).
	Slot      Stamp
	goneSince Stamp // when its process was first seen gone
	// Overlapped: it started while another run was in progress.
	// EndUnlogged: its start said no end of it will be logged
	// (Event.EndUnlogged): once its process is gone it ends as Unknown.
	Overlapped  bool
	EndUnlogged bool
	seenAlive   bool // its process was seen alive (since jobwatch started)
}

// SourceState is what jobwatch knows of one source; it is saved with the
// state, the position together with the job state it produced.
type SourceState struct {
	Records        uint64
	ParseErrors    uint64
	UnknownJob     uint64
	PositionResets uint64
	// LateRecords are records that came after their job had decided past
	// their time.
	LateRecords uint64
	// Position is the source's own, opaque to the model and to the state
	// file (which holds it as the source wrote it).
	Position json.RawMessage
	// Identity names what the source reads (its type and file, table or
	// journal), so that its position can follow it to a new name.
	Identity string
	// Retired is when the source was removed from the config.
	Retired time.Time
	up      bool
	reason  string // why it is down (SetHealth's error); not saved
}

func (s SourceState) clone() SourceState {
	s.Position = slices.Clone(s.Position)
	return s
}

// DurationBuckets are the upper bounds of jobwatch_job_duration_seconds:
// from sub-second scripts to day-long batch jobs.
var DurationBuckets = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400}

// Histogram counts durations in DurationBuckets (not cumulative; the last
// count is above the largest bound) and in the buckets of a native
// histogram (NativeSchema): Native, sorted by key, holds the buckets that
// have counted, Zero the durations of 0 (NativeZeroThreshold) or less.
type Histogram struct {
	Counts []uint64
	Native []NativeBucket
	Zero   uint64
	Sum    float64
	Count  uint64
}

// NativeSchema is the schema of Histogram's native buckets: 8 buckets per
// power of two, each about 9% wider than the one below (client_golang's
// default bucket factor of 1.1), from milliseconds to days in a few
// buckets for a job whose durations vary little.
const NativeSchema = 3

// NativeZeroThreshold is the width of the native histogram's zero bucket:
// client_golang's default (2^-128), far below a nanosecond, so that it
// holds the durations of 0; a width above 0 is also what tells Prometheus
// before 2.48 that a histogram without buckets yet is a native one.
const NativeZeroThreshold = 0x1p-128

// NativeBucket counts the durations in (2^((Key-1)/8), 2^(Key/8)]
// seconds.
type NativeBucket struct {
	Key   int32
	Count uint64
}

// nativeBounds are the fractions (of math.Frexp) at which the buckets of
// one power of two end, client_golang's for schema 3 so that a duration
// falls in the same bucket as there.
var nativeBounds = []float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// NativeKey is the key of the native bucket of a duration v > 0.
func NativeKey(v float64) int32 {
	frac, exp := math.Frexp(v)
	return int32(sort.SearchFloat64s(nativeBounds, frac) + (exp-1)*len(nativeBounds))
}

// Observe adds one duration in seconds.
func (h *Histogram) Observe(v float64) {
	if len(h.Counts) != len(DurationBuckets)+1 {
		h.Counts = make([]uint64, len(DurationBuckets)+1)
	}
	h.Counts[sort.SearchFloat64s(DurationBuckets, v)]++
	h.Sum += v
	h.Count++
	if !(v > NativeZeroThreshold) {
		h.Zero++ // a duration of 0 is common (records to the second); below 0, a clock stepped
		return
	}
	h.AddNative(NativeKey(min(v, math.MaxFloat64)), 1)
}

// AddNative adds n to the native bucket of key.
func (h *Histogram) AddNative(key int32, n uint64) {
	i, found := slices.BinarySearchFunc(h.Native, key, func(b NativeBucket, k int32) int { return int(b.Key - k) })
	if !found {
		h.Native = slices.Insert(h.Native, i, NativeBucket{Key: key})
	}
	h.Native[i].Count += n
}

// Buckets are the upper bounds of DurationBuckets with their cumulative
// counts, as Prometheus wants them (the +Inf bucket is Count).
func (h *Histogram) Buckets() iter.Seq2[float64, uint64] {
	return func(yield func(float64, uint64) bool) {
		var acc uint64
		for i, ub := range DurationBuckets {
			if i < len(h.Counts) {
				acc += h.Counts[i]
			}
			if !yield(ub, acc) {
				return
			}
		}
	}
}

// Cumulative is Buckets as a map, as client_golang's const histogram takes
// them.
func (h *Histogram) Cumulative() map[float64]uint64 { return maps.Collect(h.Buckets()) }

// Snapshot is a whole state as package state loads it, for Restore.
type Snapshot struct {
	// Written is when the state was last saved: the model's clock does
	// not go back before it.
	Written time.Time
	Jobs    map[string]SavedJob
	Sources map[string]*SourceState
	// Retired are the states of sources removed from the config.
	Retired map[string]*SourceState
}

// SavedJob is a job's state with its history and runs in progress.
type SavedJob struct {
	JobState
	History
	Open    []Run
	Pending []Held
	// DecidedUntil: see JobView.
	DecidedUntil time.Time
}

// Snapshot copies the whole state (for tests and tools; the saver takes
// only what changed, with Changes).
func (t *Tracker) Snapshot() *Snapshot {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := &Snapshot{Jobs: make(map[string]SavedJob, len(t.order.jobs)), Sources: make(map[string]*SourceState, len(t.order.marks.sources))}
	for name, j := range t.order.jobs {
		v := j.view(t.order.reap.decidedOf(j))
		s.Jobs[name] = SavedJob{JobState: *v.JobState, History: v.History, Open: v.Open, Pending: v.Pending, DecidedUntil: v.DecidedUntil}
	}
	for name, src := range t.order.marks.sources {
		c := src.SourceState.clone()
		s.Sources[name] = &c
	}
	if len(t.retired) > 0 {
		s.Retired = make(map[string]*SourceState, len(t.retired))
		for name, r := range t.retired {
			c := r.clone()
			s.Retired[name] = &c
		}
	}
	return s
}

// Restore loads a saved state. Call it after Configure and before any source
// runs: saved jobs and sources that are configured take their saved state;
// saved discovered jobs that are not are retired (see Configure), other
// jobs dropped; other sources are kept as retired, for a source configured
// again (or renamed) to take over. Everything counts as changed afterwards
// (see Changes).
func (t *Tracker) Restore(s *Snapshot) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.order.signalHeld() // the records the state holds wait for their watermarks again
	now := t.clock.now()
	for name, sj := range s.Jobs {
		j := t.order.jobs[name]
		configured := j != nil
		if !configured && !sj.Discovered {
			continue
		}
		if !configured {
			j = &job{spec: retiredSpec(name)}
			t.order.jobs[name] = j
		}
		t.restoreJob(name, j, &sj, configured, now)
	}
	t.order.reap.stale = true
	t.clock.atLeast(s.Written)
	for name, r := range s.Retired {
		if r != nil {
			t.retired[name] = *r
		}
	}
	for name, ss := range s.Sources {
		if ss == nil {
			continue
		}
		src := t.order.marks.sources[name]
		if src == nil || src.Identity != ss.Identity {
			// Removed or changed while jobwatch was stopped.
			t.retire(name, *ss)
			continue
		}
		up, reason := src.up, src.reason
		src.SourceState = *ss
		src.up, src.reason = up, reason
	}
	t.adoptRetired()
	excuseDowntime(t.order.jobs, t.order.marks.sources, s.Written, now)
	t.log.changedAll()
	return nil
}

// restoreJob gives j the saved state sj; configured: the config names the
// job (else it is a discovered job gone from the host, retired).
func (t *Tracker) restoreJob(name string, j *job, sj *SavedJob, configured bool, now time.Time) {
	st := sj.JobState
	j.JobState = &st
	j.shared.Store(true) // the snapshot's maps and slices may be its caller's
	if configured {
		j.configure(j.spec, now) // a retired job back takes up its history
	} else {
		j.retire(now) // gone from the host, maybe while jobwatch was stopped
	}
	j.history.recent.load(sj.Recent, MaxRecentRuns)
	j.history.durations.load(sj.DurationHistory, MaxDurationHistory)
	j.runs.open = make([]*Run, 0, len(sj.Open))
	for i := range sj.Open {
		r := sj.Open[i]
		// Its end may be among the records read again, dated before
		// what the state had decided: it is closed for its age only
		// once decisions have passed the restart (timeOut, abandon).
		r.readLate = now.UnixNano()
		if j.runs.at(r.Key()) < 0 {
			j.runs.open = append(j.runs.open, &r)
		}
	}
	slices.SortFunc(j.runs.open, compareRuns)
	j.runs.abandonQuiet = 0
	j.decided = sj.DecidedUntil
	j.held.reset()
	if j.held.restore(sj.Pending) {
		t.order.holding[j] = struct{}{}
	}
	j.held.sort()
}
