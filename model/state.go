package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// JobState is what jobwatch knows of one job; it is saved with the state.
type JobState struct {
	// FirstWatched is when jobwatch started watching the job: the reference
	// for staleness until a success is seen.
	FirstWatched        time.Time         `json:"first_watched"`
	LastStart           time.Time         `json:"last_start,omitzero"`
	LastSuccess         time.Time         `json:"last_success,omitzero"`
	LastSuccessStart    time.Time         `json:"last_success_start,omitzero"`
	LastFailure         time.Time         `json:"last_failure,omitzero"`
	LastDuration        float64           `json:"last_duration,omitempty"`
	HasLastDuration     bool              `json:"has_last_duration,omitempty"`
	LastExitCode        int               `json:"last_exit_code,omitempty"`
	HasLastExitCode     bool              `json:"has_last_exit_code,omitempty"`
	ConsecutiveFailures uint64            `json:"consecutive_failures,omitempty"`
	ConsecutiveSkips    uint64            `json:"consecutive_skips,omitempty"`
	Runs                map[Result]uint64 `json:"runs,omitempty"`
	Skips               uint64            `json:"skips,omitempty"`
	Overlaps            uint64            `json:"overlaps,omitempty"`
	Durations           Histogram         `json:"durations"`
	// LostRuns are the keys of the latest runs closed as lost.
	LostRuns []RunKey `json:"lost_runs,omitempty"`

	// Slot accounting, for calendar schedules.
	Missed     uint64            `json:"missed,omitempty"`
	Unexpected uint64            `json:"unexpected,omitempty"`
	Duplicates map[string]uint64 `json:"duplicates,omitempty"`
	// SlotsCheckedUntil: every expected run up to here has been counted as
	// run or missed.
	SlotsCheckedUntil time.Time  `json:"slots_checked_until,omitzero"`
	RecentSlots       []SlotRuns `json:"recent_slots,omitempty"`
	// Sources that reported the job: missed runs are not counted from the
	// clock while one of them cannot be read.
	Sources []string `json:"sources,omitempty"`
	// Recent are the latest finished and skipped runs, oldest first, at
	// most MaxRecentRuns.
	Recent []RecentRun `json:"recent,omitempty"`
	// DurationHistory are the latest finished runs' durations in seconds,
	// oldest first, at most MaxDurationHistory.
	DurationHistory []float64 `json:"duration_history,omitempty"`
}

// Run is a run in progress.
type Run struct {
	Key    RunKey    `json:"key"`
	RunID  string    `json:"run_id,omitempty"`
	Host   string    `json:"host,omitempty"`
	PID    int       `json:"pid,omitempty"`
	Start  time.Time `json:"start"`
	Source string    `json:"source"`
	// Slot is the expected run it belongs to (calendar schedules).
	Slot time.Time `json:"slot,omitzero"`
	// Overlapped: it started while another run was in progress.
	Overlapped bool `json:"overlapped,omitempty"`

	goneSince time.Time // when its process was first seen gone
}

// SourceState is what jobwatch knows of one source; it is saved with the
// state, the position together with the job state it produced.
type SourceState struct {
	Records        uint64          `json:"records"`
	ParseErrors    uint64          `json:"parse_errors"`
	UnknownJob     uint64          `json:"unknown_job"`
	PositionResets uint64          `json:"position_resets"`
	Position       json.RawMessage `json:"position,omitempty"`
	// Identity names what the source reads (its type and file, table or
	// journal), so that its position can follow it to a new name.
	Identity string `json:"identity,omitempty"`
	// Retired is when the source was removed from the config.
	Retired time.Time `json:"retired,omitzero"`
	up      bool
}

// DurationBuckets are the upper bounds of jobwatch_job_duration_seconds:
// from sub-second scripts to day-long batch jobs.
var DurationBuckets = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400}

// Histogram counts durations in DurationBuckets (not cumulative; the last
// count is above the largest bound).
type Histogram struct {
	Counts []uint64 `json:"counts,omitempty"`
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

// Observe adds one duration in seconds.
func (h *Histogram) Observe(v float64) {
	if len(h.Counts) != len(DurationBuckets)+1 {
		h.Counts = make([]uint64, len(DurationBuckets)+1)
	}
	h.Counts[sort.SearchFloat64s(DurationBuckets, v)]++
	h.Sum += v
	h.Count++
}

// Cumulative returns the bucket counts as Prometheus wants them.
func (h *Histogram) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(DurationBuckets))
	var acc uint64
	for i, ub := range DurationBuckets {
		if i < len(h.Counts) {
			acc += h.Counts[i]
		}
		m[ub] = acc
	}
	return m
}

// Snapshot is the whole saved state.
type Snapshot struct {
	Version int                     `json:"version"`
	Saved   time.Time               `json:"saved"`
	Jobs    map[string]SavedJob     `json:"jobs"`
	Sources map[string]*SourceState `json:"sources"`
	// Retired are the states of sources removed from the config.
	Retired map[string]*SourceState `json:"retired,omitempty"`
}

// SavedJob is a job's state with its runs in progress.
type SavedJob struct {
	JobState
	Open []Run `json:"open,omitempty"`
}

// SnapshotVersion is the format version of Snapshot.
const SnapshotVersion = 1

// Snapshot copies the whole state for saving, with its version (see
// Version).
func (t *Tracker) Snapshot() (*Snapshot, uint64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshot(), t.version
}

func (t *Tracker) snapshot() *Snapshot {
	s := &Snapshot{Version: SnapshotVersion, Saved: t.opts.Now(), Jobs: make(map[string]SavedJob, len(t.jobs)), Sources: make(map[string]*SourceState, len(t.sources))}
	for name, j := range t.jobs {
		sj := SavedJob{JobState: j.JobState}
		sj.Runs = make(map[Result]uint64, len(j.Runs))
		for r, n := range j.Runs {
			sj.Runs[r] = n
		}
		sj.Durations.Counts = append([]uint64(nil), j.Durations.Counts...)
		sj.LostRuns = append([]RunKey(nil), j.LostRuns...)
		sj.Duplicates = maps.Clone(j.Duplicates)
		sj.Sources = slices.Clone(j.Sources)
		sj.RecentSlots = make([]SlotRuns, len(j.RecentSlots))
		for i, rs := range j.RecentSlots {
			sj.RecentSlots[i] = SlotRuns{Slot: rs.Slot, Hosts: slices.Clone(rs.Hosts)}
		}
		for _, r := range j.open {
			sj.Open = append(sj.Open, *r)
		}
		sort.Slice(sj.Open, func(a, b int) bool { return sj.Open[a].Key.less(sj.Open[b].Key) })
		s.Jobs[name] = sj
	}
	for name, src := range t.sources {
		c := src.SourceState
		c.Position = append(json.RawMessage(nil), src.Position...)
		s.Sources[name] = &c
	}
	if len(t.retired) > 0 {
		s.Retired = make(map[string]*SourceState, len(t.retired))
		for name, r := range t.retired {
			c := r
			c.Position = append(json.RawMessage(nil), r.Position...)
			s.Retired[name] = &c
		}
	}
	return s
}

// Restore loads a saved state. Call it after Configure and before any source
// runs: saved jobs and sources that are configured take their saved state;
// other jobs are dropped; other sources are kept as retired, for a source
// configured again (or renamed) to take over.
func (t *Tracker) Restore(s *Snapshot) error {
	if s.Version != SnapshotVersion {
		return fmt.Errorf("state format version %d, this jobwatch reads %d", s.Version, SnapshotVersion)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, sj := range s.Jobs {
		j := t.jobs[name]
		if j == nil {
			continue
		}
		j.JobState = sj.JobState
		if j.Runs == nil {
			j.Runs = map[Result]uint64{}
		}
		if j.Duplicates == nil {
			j.Duplicates = map[string]uint64{}
		}
		j.open = make(map[RunKey]*Run, len(sj.Open))
		for i := range sj.Open {
			r := sj.Open[i]
			j.open[r.Key] = &r
		}
	}
	for name, r := range s.Retired {
		if r != nil {
			t.retired[name] = *r
		}
	}
	for name, ss := range s.Sources {
		if ss == nil {
			continue
		}
		src := t.sources[name]
		if src == nil || src.Identity != ss.Identity {
			// Removed or changed while jobwatch was stopped.
			t.retire(name, *ss)
			continue
		}
		up := src.up
		src.SourceState = *ss
		src.up = up
	}
	t.adoptRetired()
	t.version++
	return nil
}
