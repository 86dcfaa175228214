package state

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The records below are the state file's own types: their JSON is the
// format described in docs/state.md. They are converted to and from the
// model's types here, so the model can change without changing the format,
// and the format can change (with a new version and a migration) without
// changing the model. Format 1 (state.json) used the same keys.

// jobRecord is one job's saved state with its runs in progress.
type jobRecord struct {
	// FirstWatched is left out of a log entry of format 4 that holds the
	// job's runs as added (RecentCount): it never changes.
	FirstWatched     time.Time `json:"first_watched,omitzero"`
	LastStart        time.Time `json:"last_start,omitzero"`
	LastSuccess      time.Time `json:"last_success,omitzero"`
	LastSuccessStart time.Time `json:"last_success_start,omitzero"`
	LastFailure      time.Time `json:"last_failure,omitzero"`
	// LastUnknown and LastUnknownStart: the latest run of unknown result.
	LastUnknown      time.Time `json:"last_unknown,omitzero"`
	LastUnknownStart time.Time `json:"last_unknown_start,omitzero"`
	// LastDuration and LastExitCode are present when the job has them
	// (format 4, zero included); format 3 wrote them when not zero, with
	// has_last_duration and has_last_exit_code, read still.
	LastDuration        *float64          `json:"last_duration,omitempty"`
	HasLastDuration     bool              `json:"has_last_duration,omitempty"`
	LastExitCode        *int              `json:"last_exit_code,omitempty"`
	HasLastExitCode     bool              `json:"has_last_exit_code,omitempty"`
	ConsecutiveFailures uint64            `json:"consecutive_failures,omitempty"`
	ConsecutiveSkips    uint64            `json:"consecutive_skips,omitempty"`
	ConsecutiveMissed   uint64            `json:"consecutive_missed,omitempty"`
	Runs                map[string]uint64 `json:"runs,omitempty"`
	Skips               uint64            `json:"skips,omitempty"`
	SkipsByReason       map[string]uint64 `json:"skips_by_reason,omitempty"`
	LockLost            map[string]uint64 `json:"lock_lost,omitempty"`
	Overlaps            uint64            `json:"overlaps,omitempty"`
	Durations           histogramRecord   `json:"durations,omitzero"`
	LostRuns            []runKeyRecord    `json:"lost_runs,omitempty"`
	Missed              uint64            `json:"missed,omitempty"`
	Unexpected          uint64            `json:"unexpected,omitempty"`
	Duplicates          map[string]uint64 `json:"duplicates,omitempty"`
	SlotsCheckedUntil   time.Time         `json:"slots_checked_until,omitzero"`
	RecentSlots         []slotRecord      `json:"recent_slots,omitempty"`
	// Sources, LastDuration and LastExitCode are left out of a log
	// entry's record that holds RecentCount (format 7) when they are as
	// before; no sources is then written [].
	Sources         []string       `json:"sources,omitzero"`
	Open            []runRecord    `json:"open,omitempty"`
	Recent          []recentRecord `json:"recent,omitempty"`
	DurationHistory []float64      `json:"duration_history,omitempty"`
	// RecentAdded and RecentCount (format 4, in log entries): the job's
	// recent runs are the last RecentCount of those it had before the
	// entry followed by RecentAdded, and Recent is left out; the same for
	// DurationHistory. A stream's entry then holds the run it added, not a
	// job's last 50 runs again (10 KB a job, rewritten at every change).
	RecentAdded          []recentRecord `json:"recent_added,omitempty"`
	RecentCount          *int           `json:"recent_count,omitempty"`
	DurationHistoryAdded []float64      `json:"duration_history_added,omitempty"`
	DurationHistoryCount *int           `json:"duration_history_count,omitempty"`
	// LockTTL in seconds; absent (as in states written before it) is none.
	LockTTL float64 `json:"lock_ttl_seconds,omitempty"`
	// DecidedUntil and Pending: how far the job's decisions have gone in
	// event time, and the records held for its watermark (format 3).
	DecidedUntil time.Time    `json:"decided_until,omitzero"`
	Pending      []heldRecord `json:"pending,omitempty"`
	// HeldOnly (format 5, in log entries): the job is as the entry before
	// left it but for its records held (Pending), which are all the record
	// holds, with DecidedUntil. A live record is saved so when it is read
	// (its fact); its job is written whole once its verdict is made.
	HeldOnly bool `json:"held_only,omitempty"`
	// Discovered, Retired and Resumed: a job host mode found, when it
	// disappeared from the host, when it came back. Optional, as
	// lock_ttl_seconds: absent (a state written before them) is a job of
	// the config, watched; a reader before them ignores them.
	Discovered bool      `json:"discovered,omitempty"`
	Retired    time.Time `json:"retired,omitzero"`
	Resumed    time.Time `json:"resumed,omitzero"`
	pausedRecord
}

// heldRecord is a record held for its job's watermark: what a source read,
// with the source's name.
//
// In a job's list, a record of the same run as the one before it (format
// 6: AsBefore) leaves out the source, host, PID and run ID, which are
// that one's, and its time when it is that one's too: a short run's start
// and end are held together, and most of the end's bytes were its start's.
type heldRecord struct {
	Source    string    `json:"source,omitempty"`
	Time      time.Time `json:"time,omitzero"`
	Kind      string    `json:"kind"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	Result    string    `json:"result,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Duration  *float64  `json:"duration_seconds,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	SkipLabel string    `json:"skip_label,omitempty"`
	Lock      string    `json:"lock,omitempty"`
	Holder    string    `json:"holder,omitempty"`
	HolderPID int       `json:"holder_pid,omitempty"`
	LockTTL   float64   `json:"lock_ttl_seconds,omitempty"`
	Output    string    `json:"output,omitempty"`
	OutputRef string    `json:"output_ref,omitempty"`
	// EndUnlogged: a start whose end will not be logged (cron -L 1).
	EndUnlogged bool `json:"end_unlogged,omitempty"`
	// AsBefore (format 7): Source, Host, PID and RunID are those of the
	// record before in the list, and so is Time when it is absent.
	AsBefore bool `json:"as_before,omitempty"`
}

// appendHeldRecords appends a job's records held to rs, each of the same
// run as the one before it written AsBefore.
func appendHeldRecords(rs []heldRecord, held []model.Held) []heldRecord {
	var b heldRecord // the record before, spelled out
	for i := range held {
		r := heldToRecord(&held[i])
		next := r
		if i > 0 && r.Source == b.Source && r.Host == b.Host && r.PID == b.PID && r.RunID == b.RunID {
			r.AsBefore, r.Source, r.Host, r.PID, r.RunID = true, "", "", 0, ""
			if r.Time.Equal(b.Time) && r.Time.Location() == b.Time.Location() {
				r.Time = time.Time{}
			}
		}
		b = next
		rs = append(rs, r)
	}
	return rs
}

// heldToModel converts a job's records held as read, AsBefore ones filled
// in from the one before them; a record no record could be is dropped.
func heldToModel(rs []heldRecord) []model.Held {
	var held []model.Held
	for i := range rs {
		r := rs[i]
		if r.AsBefore && i > 0 {
			b := &rs[i-1] // filled in already
			r.Source, r.Host, r.PID, r.RunID = b.Source, b.Host, b.PID, b.RunID
			if r.Time.IsZero() {
				r.Time = b.Time
			}
			rs[i] = r
		}
		if h, ok := r.toModel(); ok {
			held = append(held, h)
		}
	}
	return held
}

func heldToRecord(held *model.Held) heldRecord {
	h := held.Event()
	r := heldRecord{Source: held.Source(), Time: h.Time, Kind: h.Kind.String(), Host: h.Host, PID: h.PID, RunID: h.RunID,
		Result: string(h.Result), Reason: h.Reason, SkipLabel: h.SkipLabel, Lock: h.Lock, Holder: h.Holder,
		HolderPID: h.HolderPID, LockTTL: h.LockTTL.Seconds(), Output: h.Output, OutputRef: h.OutputRef,
		EndUnlogged: h.EndUnlogged}
	if h.HasExitCode {
		c := h.ExitCode
		r.ExitCode = &c
	}
	if h.HasDuration {
		// Nanoseconds survive the trip: float64 holds durations up to 104
		// days exactly.
		d := h.Duration.Seconds()
		r.Duration = &d
	}
	return r
}

// toModel converts a held record; ok is false for one no record could be
// (a kind or result this version does not know), which is dropped.
func (r *heldRecord) toModel() (model.Held, bool) {
	kind, ok := model.ParseKind(r.Kind)
	if !ok {
		return model.Held{}, false
	}
	h := model.Event{Time: r.Time, Kind: kind, Host: r.Host, PID: r.PID, RunID: r.RunID,
		Reason: r.Reason, SkipLabel: r.SkipLabel, Lock: r.Lock, Holder: r.Holder, HolderPID: r.HolderPID,
		LockTTL: lockTTL(r.LockTTL), Output: r.Output, OutputRef: r.OutputRef, EndUnlogged: r.EndUnlogged}
	if kind == model.End {
		res, ok := model.ParseStatus(r.Result)
		if r.Result == string(model.Unknown) {
			res, ok = model.Unknown, true // a cron END of a cron that logs no failures
		}
		if !ok {
			return model.Held{}, false
		}
		h.Result = res
	}
	if r.ExitCode != nil {
		h.ExitCode, h.HasExitCode = *r.ExitCode, true
	}
	if r.Duration != nil && *r.Duration >= 0 && *r.Duration < math.MaxInt64/1e9 {
		h.Duration, h.HasDuration = time.Duration(math.Round(*r.Duration*1e9)), true
	}
	return model.NewHeld(&h, r.Source), true
}

// recentRecord is one of a job's latest finished or skipped runs.
type recentRecord struct {
	Start      time.Time `json:"start,omitzero"`
	End        time.Time `json:"end"`
	Duration   *float64  `json:"duration_seconds,omitempty"`
	Result     string    `json:"result"`
	Host       string    `json:"host,omitempty"`
	PID        int       `json:"pid,omitempty"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Lock       string    `json:"lock,omitempty"`
	Holder     string    `json:"holder,omitempty"`
	Output     string    `json:"output,omitempty"`
	OutputRef  string    `json:"output_ref,omitempty"`
	Overlapped bool      `json:"overlapped,omitempty"`
}

type histogramRecord struct {
	// Counts without its trailing zeros (format 4): most durations fall in
	// a few buckets of the 18.
	Counts []uint64 `json:"counts,omitempty"`
	// Native holds the native histogram's buckets that counted, [key,
	// count] by key (model.NativeSchema), and Zero the durations of 0:
	// additive keys; a record without them (written before them) loads
	// with the classic counts placed at their buckets' bounds (nativeOf).
	Native [][2]int64 `json:"native,omitempty"`
	Zero   uint64     `json:"zero,omitempty"`
	Sum    float64    `json:"sum"`
	Count  uint64     `json:"count"`
}

// histogramOf is h as saved.
func histogramOf(h *model.Histogram) histogramRecord {
	r := histogramRecord{Counts: trimZeros(h.Counts), Zero: h.Zero, Sum: h.Sum, Count: h.Count}
	if len(h.Native) > 0 {
		r.Native = make([][2]int64, len(h.Native))
		for i, b := range h.Native {
			r.Native[i] = [2]int64{int64(b.Key), int64(b.Count)}
		}
	}
	return r
}

// toModel is the histogram r saved.
func (r *histogramRecord) toModel() model.Histogram {
	h := model.Histogram{Counts: padZeros(r.Counts, len(model.DurationBuckets)+1), Zero: r.Zero, Sum: r.Sum, Count: r.Count}
	for _, b := range r.Native {
		if b[1] > 0 && b[0] >= math.MinInt32 && b[0] <= math.MaxInt32 {
			h.AddNative(int32(b[0]), uint64(b[1]))
		}
	}
	if r.Native == nil && r.Zero == 0 && r.Count > 0 {
		nativeOf(&h)
	}
	return h
}

// nativeOf fills the native buckets of a histogram saved before them from
// its classic counts, each at the bucket of its upper bound (those above
// the last bound one bucket above it): the native histogram then counts
// every run, its quantiles no finer than the classic buckets' until new
// runs come.
func nativeOf(h *model.Histogram) {
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		if i < len(model.DurationBuckets) {
			h.AddNative(model.NativeKey(model.DurationBuckets[i]), n)
		} else {
			h.AddNative(model.NativeKey(model.DurationBuckets[len(model.DurationBuckets)-1])+1, n)
		}
	}
}

// IsZero: a job with no durations (none finished with one, or a held_only
// record) leaves its histogram out (format 5); absent reads as empty.
func (h histogramRecord) IsZero() bool {
	return len(h.Counts) == 0 && len(h.Native) == 0 && h.Zero == 0 && h.Sum == 0 && h.Count == 0
}

type runKeyRecord struct {
	RunID string `json:"run_id,omitempty"`
	Host  string `json:"host,omitempty"`
	PID   int    `json:"pid,omitempty"`
}

type slotRecord struct {
	Slot  time.Time `json:"slot"`
	Hosts []string  `json:"hosts"`
}

type runRecord struct {
	Key    runKeyRecord `json:"key"`
	RunID  string       `json:"run_id,omitempty"`
	Host   string       `json:"host,omitempty"`
	PID    int          `json:"pid,omitempty"`
	Start  time.Time    `json:"start"`
	Source string       `json:"source"`
	Slot   time.Time    `json:"slot,omitzero"`
	// Overlapped: it started while another run was in progress.
	Overlapped bool `json:"overlapped,omitempty"`
	// Lease: the shared lock's lease its start record named.
	Lease time.Duration `json:"lease,omitempty"`
	// EndUnlogged: no end of it will be logged (cron -L 1).
	EndUnlogged bool `json:"end_unlogged,omitempty"`
}

// sourceRecord is one source's counters and read position.
type sourceRecord struct {
	Records        uint64          `json:"records"`
	ParseErrors    uint64          `json:"parse_errors"`
	UnknownJob     uint64          `json:"unknown_job"`
	PositionResets uint64          `json:"position_resets"`
	LateRecords    uint64          `json:"late_records,omitempty"`
	Position       json.RawMessage `json:"position,omitempty"`
	Identity       string          `json:"identity,omitempty"`
	Retired        time.Time       `json:"retired,omitzero"`
}

// jobToRecord converts a job's view; given prev, the view the state on
// disk holds of it, its recent runs and durations are written as what was
// added since (RecentAdded), else whole.
func jobToRecord(v, prev *model.JobView) *jobRecord { return new(jobRecord).fill(v, prev) }

// fill makes r jobToRecord(v, prev), in the memory of r's lists and maps:
// a save writes each job's record and then lets it go, and one record
// filled for every job of a snapshot allocates a few hundred bytes where
// new ones allocated 3 KB (a 50,000-job catch-up's saves kept 50 MB of
// them in the heap).
func (r *jobRecord) fill(v, prev *model.JobView) *jobRecord {
	keep := jobRecord{Runs: r.Runs, SkipsByReason: r.SkipsByReason, LockLost: r.LockLost, Duplicates: r.Duplicates,
		LostRuns: r.LostRuns[:0], RecentSlots: r.RecentSlots[:0], Open: r.Open[:0], Recent: r.Recent[:0],
		RecentAdded: r.RecentAdded[:0], Pending: r.Pending[:0]}
	clear(keep.Runs)
	clear(keep.SkipsByReason)
	clear(keep.LockLost)
	clear(keep.Duplicates)
	if onlyHeldChanged(v, prev) {
		// Its decided_until is left as the state on disk has it (format 7):
		// nothing of the job changed as its decisions went on, and a job's
		// decisions that move on alone are saved with its next change.
		*r = keep
		r.HeldOnly, r.Pending = true, appendHeldRecords(r.Pending, v.Pending)
		return r
	}
	j := v.JobState
	*r = jobRecord{
		FirstWatched: j.FirstWatched.Time(), LastStart: j.LastStart.Time(), LastSuccess: j.LastSuccess.Time(),
		LastSuccessStart: j.LastSuccessStart.Time(), LastFailure: j.LastFailure.Time(),
		LastUnknown: j.LastUnknown.Time(), LastUnknownStart: j.LastUnknownStart.Time(),
		ConsecutiveFailures: j.ConsecutiveFailures, ConsecutiveSkips: j.ConsecutiveSkips, ConsecutiveMissed: j.ConsecutiveMissed,
		Skips: j.Skips, Overlaps: j.Overlaps,
		Durations: histogramOf(&j.Durations),
		Missed:    j.Missed, Unexpected: j.Unexpected, SlotsCheckedUntil: j.SlotsCheckedUntil.Time(),
		Sources:      j.Sources,
		LockTTL:      j.LockTTL.Seconds(),
		DecidedUntil: v.DecidedUntil, Discovered: j.Discovered, Retired: j.Retired.Time(), Resumed: j.Resumed.Time(),
		pausedRecord: pausedToRecord(j.Pauses),
		Runs:         keep.Runs, SkipsByReason: keep.SkipsByReason, LockLost: keep.LockLost, Duplicates: keep.Duplicates,
		LostRuns: keep.LostRuns, RecentSlots: keep.RecentSlots, Open: keep.Open, Recent: keep.Recent, RecentAdded: keep.RecentAdded,
	}
	r.SkipsByReason = model.CountsInto(r.SkipsByReason, model.SkipReasons, j.SkipCounts[:], j.SkipsDeclared)
	r.LockLost = model.CountsInto(r.LockLost, model.LockLayers, j.LockLostCounts[:], nil)
	r.Pending = appendHeldRecords(keep.Pending, v.Pending)
	if j.HasLastDuration {
		r.LastDuration = &j.LastDuration
	}
	if j.HasLastExitCode {
		r.LastExitCode = &j.LastExitCode
	}
	recent, durations := v.RecentRuns(), v.LastDurations()
	if prev == nil {
		r.DurationHistory = durations
		for _, run := range recent {
			r.Recent = append(r.Recent, recentToRecord(run))
		}
	} else {
		if r.FirstWatched.Equal(prev.FirstWatched.Time()) {
			r.FirstWatched = time.Time{}
		}
		added := appended(prev.RecentRuns(), recent)
		r.RecentCount = new(len(recent))
		for _, run := range recent[len(recent)-added:] {
			r.RecentAdded = append(r.RecentAdded, recentToRecord(run))
		}
		r.DurationHistoryAdded = durations[len(durations)-appended(prev.LastDurations(), durations):]
		r.DurationHistoryCount = new(len(durations))
		if !leaveOutUnchanged(r, prev.JobState) {
			return r.fill(v, nil)
		}
	}
	for i, n := range j.RunCounts {
		if n > 0 {
			if r.Runs == nil {
				r.Runs = map[string]uint64{}
			}
			r.Runs[string(model.Results[i])] = n
		}
	}
	for i, n := range j.DupCounts {
		if n > 0 {
			if r.Duplicates == nil {
				r.Duplicates = map[string]uint64{}
			}
			r.Duplicates[model.DuplicateKinds[i]] = n
		}
	}
	for _, k := range j.LostRuns {
		r.LostRuns = append(r.LostRuns, runKeyRecord(k))
	}
	for _, s := range j.RecentSlots {
		r.RecentSlots = append(r.RecentSlots, slotRecord{Slot: s.Slot, Hosts: s.Hosts})
	}
	for _, o := range v.Open {
		r.Open = append(r.Open, runRecord{Key: runKeyRecord(o.Key()), RunID: o.RunID, Host: o.Host, PID: o.PID, Start: o.Start.Time(), Source: o.Source, Slot: o.Slot.Time(), Overlapped: o.Overlapped, Lease: o.Lease, EndUnlogged: o.EndUnlogged})
	}
	return r
}

// leaveOutUnchanged leaves out of r, a record that holds what its job
// added since prev, the sources, last duration and last exit code that are
// prev's (format 7); false if r holds none of one that prev held, which
// only a whole record can say.
func leaveOutUnchanged(r *jobRecord, prev *model.JobState) bool {
	if (r.LastDuration == nil && prev.HasLastDuration) || (r.LastExitCode == nil && prev.HasLastExitCode) {
		return false
	}
	if slices.Equal(r.Sources, prev.Sources) {
		r.Sources = nil
	} else if r.Sources == nil {
		r.Sources = []string{}
	}
	if prev.HasLastDuration && *r.LastDuration == prev.LastDuration {
		r.LastDuration = nil
	}
	if prev.HasLastExitCode && *r.LastExitCode == prev.LastExitCode {
		r.LastExitCode = nil
	}
	return true
}

// onlyHeldChanged says v differs from prev, the view on disk, in its
// records held and how far it has decided at most: its state is prev's
// (shared, or copied before a change that did not come: model's job.own),
// and so are its runs in progress, recent runs and durations. A state
// equal but told apart (a time in another location) is written whole.
func onlyHeldChanged(v, prev *model.JobView) bool {
	return prev != nil && v.Spec.Name == prev.Spec.Name &&
		(v.JobState == prev.JobState || reflect.DeepEqual(*v.JobState, *prev.JobState)) &&
		slices.Equal(v.Open, prev.Open) &&
		slices.Equal(v.LastDurations(), prev.LastDurations()) &&
		slices.EqualFunc(v.RecentRuns(), prev.RecentRuns(), func(a, b model.RecentRun) bool { return a == b })
}

// appended is how many of now's last elements were added after before:
// now is the last len(now) of before followed by them. An element equal
// to one before may be taken for it, which gives the same list.
func appended[T comparable](before, now []T) int {
	for added := range len(now) {
		kept := len(now) - added
		if kept <= len(before) && slices.Equal(now[:kept], before[len(before)-kept:]) {
			return added
		}
	}
	return len(now)
}

// afterAdded is the last n of before followed by added (all of them if
// fewer, none if n is negative): a job's recent runs or durations after a
// log entry that says what it added.
func afterAdded[T any](before, added []T, n int) []T {
	all := append(slices.Clip(before), added...)
	return all[len(all)-max(0, min(n, len(all))):]
}

// trimZeros is counts without its trailing zeros.
func trimZeros(counts []uint64) []uint64 {
	n := len(counts)
	for n > 0 && counts[n-1] == 0 {
		n--
	}
	return counts[:n]
}

// padZeros is counts with zeros added up to n (trimZeros undone); none
// stays none.
func padZeros(counts []uint64, n int) []uint64 {
	if len(counts) == 0 || len(counts) >= n {
		return counts
	}
	return append(slices.Clip(counts), make([]uint64, n-len(counts))...)
}

func recentToRecord(run model.RecentRun) recentRecord {
	rr := run.Fields()
	rec := recentRecord{Start: rr.Start, End: rr.End, Result: string(rr.Result), Host: rr.Host, PID: rr.PID,
		Reason: rr.Reason, Lock: rr.Lock, Holder: rr.Holder, Output: rr.Output, OutputRef: rr.OutputRef, Overlapped: rr.Overlapped}
	if rr.HasDuration {
		d := rr.Duration.Seconds()
		rec.Duration = &d
	}
	if rr.HasExitCode {
		c := rr.ExitCode
		rec.ExitCode = &c
	}
	return rec
}

// toModelAfter converts a record of a log entry, whose recent runs and
// durations may be what was added to before's (RecentCount).
func (r *jobRecord) toModelAfter(before *model.SavedJob, version int) model.SavedJob {
	if r.HeldOnly && before != nil {
		// Without decided_until (format 7) it is before's.
		j := *before
		j.Pending = heldToModel(r.Pending)
		if !r.DecidedUntil.IsZero() {
			j.DecidedUntil = r.DecidedUntil
		}
		return j
	}
	j := r.toModel()
	var prev model.History
	if before != nil {
		prev = before.History
		if r.RecentCount != nil && r.FirstWatched.IsZero() {
			j.FirstWatched = before.FirstWatched
		}
	}
	if r.RecentCount != nil && before != nil && version >= 7 {
		r.unchangedTo(&j, &before.JobState)
	}
	if r.RecentCount != nil {
		j.Recent = afterAdded(prev.Recent, recentsToModel(r.RecentAdded), *r.RecentCount)
	}
	if r.DurationHistoryCount != nil {
		j.DurationHistory = afterAdded(prev.DurationHistory, r.DurationHistoryAdded, *r.DurationHistoryCount)
	}
	return j
}

// unchangedTo sets in j what r leaves out as before's (leaveOutUnchanged).
func (r *jobRecord) unchangedTo(j *model.SavedJob, before *model.JobState) {
	if r.Sources == nil {
		j.Sources = before.Sources
	}
	if r.LastDuration == nil {
		j.LastDuration, j.HasLastDuration = before.LastDuration, before.HasLastDuration
	}
	if r.LastExitCode == nil {
		j.LastExitCode, j.HasLastExitCode = before.LastExitCode, before.HasLastExitCode
	}
}

// recentsToModel converts recent runs' records (nil for none).
func recentsToModel(rs []recentRecord) []model.RecentRun {
	var runs []model.RecentRun
	for i := range rs {
		runs = append(runs, rs[i].toModel())
	}
	return runs
}

func (r *jobRecord) toModel() model.SavedJob {
	j := model.SavedJob{JobState: model.JobState{
		FirstWatched: model.StampOf(r.FirstWatched), LastStart: model.StampOf(r.LastStart), LastSuccess: model.StampOf(r.LastSuccess),
		LastSuccessStart: model.StampOf(r.LastSuccessStart), LastFailure: model.StampOf(r.LastFailure),
		LastUnknown: model.StampOf(r.LastUnknown), LastUnknownStart: model.StampOf(r.LastUnknownStart),
		ConsecutiveFailures: r.ConsecutiveFailures, ConsecutiveSkips: r.ConsecutiveSkips, ConsecutiveMissed: r.ConsecutiveMissed,
		Skips: r.Skips, Overlaps: r.Overlaps,
		Durations: r.Durations.toModel(),
		Missed:    r.Missed, Unexpected: r.Unexpected,
		SlotsCheckedUntil: model.StampOf(r.SlotsCheckedUntil), Sources: r.Sources,
		LockTTL: lockTTL(r.LockTTL), Discovered: r.Discovered, Retired: model.StampOf(r.Retired), Resumed: model.StampOf(r.Resumed),
		Pauses: r.pausedRecord.toModel(),
	}, History: model.History{DurationHistory: r.DurationHistory}, DecidedUntil: r.DecidedUntil}
	if r.LastDuration != nil {
		j.LastDuration = *r.LastDuration
	}
	j.HasLastDuration = r.HasLastDuration || r.LastDuration != nil
	if r.LastExitCode != nil {
		j.LastExitCode = *r.LastExitCode
	}
	j.HasLastExitCode = r.HasLastExitCode || r.LastExitCode != nil
	j.Pending = heldToModel(r.Pending)
	r.countsTo(&j)
	j.Recent = recentsToModel(r.Recent)
	for _, k := range r.LostRuns {
		j.LostRuns = append(j.LostRuns, model.RunKey(k))
	}
	for _, s := range r.RecentSlots {
		j.RecentSlots = append(j.RecentSlots, model.SlotRuns{Slot: s.Slot, Hosts: s.Hosts})
	}
	for _, o := range r.Open {
		j.Open = append(j.Open, model.Run{RunID: o.RunID, Host: o.Host, PID: o.PID, Start: model.StampOf(o.Start), Source: o.Source, Slot: model.StampOf(o.Slot), Overlapped: o.Overlapped, Lease: o.Lease, EndUnlogged: o.EndUnlogged})
	}
	return j
}

// countsTo sets j's counters by skip reason, lock layer, result and kind
// of duplicate.
func (r *jobRecord) countsTo(j *model.SavedJob) {
	// Skips counted before their reasons were (format 1) count as "other",
	// so that the skips by reason add up to the total.
	var byReason uint64
	for reason, n := range r.SkipsByReason {
		j.AddSkips(reason, n)
		byReason += n
	}
	if r.Skips > byReason {
		j.AddSkips(model.SkipOther, r.Skips-byReason)
	}
	for layer, n := range r.LockLost {
		if i := slices.Index(model.LockLayers, layer); i >= 0 {
			j.LockLostCounts[i] = n
		}
	}
	// A result or kind this version does not know (none are) is dropped.
	for res, n := range r.Runs {
		if i := slices.Index(model.Results, model.Result(res)); i >= 0 {
			j.RunCounts[i] = n
		}
	}
	for kind, n := range r.Duplicates {
		if i := slices.Index(model.DuplicateKinds, kind); i >= 0 {
			j.DupCounts[i] = n
		}
	}
}

func (rec *recentRecord) toModel() model.RecentRun {
	rr := model.RecentRunFields{Start: rec.Start, End: rec.End, Result: model.Result(rec.Result), Host: rec.Host, PID: rec.PID,
		Reason: rec.Reason, Lock: rec.Lock, Holder: rec.Holder, Output: rec.Output, OutputRef: rec.OutputRef, Overlapped: rec.Overlapped}
	if rec.Duration != nil {
		rr.Duration, rr.HasDuration = time.Duration(*rec.Duration*float64(time.Second)), true
	}
	if rec.ExitCode != nil {
		rr.ExitCode, rr.HasExitCode = *rec.ExitCode, true
	}
	return model.NewRecentRun(rr)
}

func sourceToRecord(s *model.SourceState) *sourceRecord {
	return &sourceRecord{Records: s.Records, ParseErrors: s.ParseErrors, UnknownJob: s.UnknownJob,
		PositionResets: s.PositionResets, LateRecords: s.LateRecords, Position: s.Position, Identity: s.Identity, Retired: s.Retired}
}

func (r *sourceRecord) toModel() *model.SourceState {
	return &model.SourceState{Records: r.Records, ParseErrors: r.ParseErrors, UnknownJob: r.UnknownJob,
		PositionResets: r.PositionResets, LateRecords: r.LateRecords, Position: r.Position, Identity: r.Identity, Retired: r.Retired}
}

// lockTTL converts a saved lease; a value no record could have carried
// (not positive, beyond model.MaxLockTTL) is dropped, not trusted.
func lockTTL(sec float64) time.Duration {
	if !(sec > 0 && sec <= model.MaxLockTTL.Seconds()) {
		return 0
	}
	return time.Duration(math.Round(sec * 1e9))
}
