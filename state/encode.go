package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jobwatch/jobwatch/internal/jsonstr"
)

// The log's entries are written by hand rather than by encoding/json's
// reflection, which was the largest cost of a stream (a commit of 33 jobs:
// most of the saver's CPU, time.Time's MarshalJSON output validated again
// for each time). The bytes are json.Marshal's, field for field
// (TestEncodeAsMarshal, FuzzEncodeAsMarshal); encoding/json reads them.

// jsonOut appends JSON to b; the first error (a time or number JSON cannot
// hold) stays in err.
type jsonOut struct {
	b   []byte
	err error
	// comma: a member or element was written since the last { or [.
	comma bool
}

func (o *jsonOut) open(c byte) { o.b, o.comma = append(o.b, c), false }

func (o *jsonOut) close(c byte) { o.b, o.comma = append(o.b, c), true }

// key begins the member name.
func (o *jsonOut) key(name string) {
	if o.comma {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
	o.comma = false
}

// elem begins an element of an array.
func (o *jsonOut) elem() {
	if o.comma {
		o.b = append(o.b, ',')
	}
	o.comma = false
}

func (o *jsonOut) str(s string) {
	o.b, o.comma = jsonstr.Append(o.b, s), true
}

func (o *jsonOut) marshal(v any) {
	p, err := json.Marshal(v)
	if err != nil && o.err == nil {
		o.err = err
	}
	o.b = append(o.b, p...)
	o.comma = true
}

func (o *jsonOut) uint(n uint64) { o.b, o.comma = strconv.AppendUint(o.b, n, 10), true }

func (o *jsonOut) int(n int64) { o.b, o.comma = strconv.AppendInt(o.b, n, 10), true }

func (o *jsonOut) bool(v bool) { o.b, o.comma = strconv.AppendBool(o.b, v), true }

func (o *jsonOut) float(f float64) {
	// encoding/json writes 'f' here and an exponent outside it.
	if a := max(f, -f); a == 0 || a >= 1e-6 && a < 1e21 {
		o.b, o.comma = strconv.AppendFloat(o.b, f, 'f', -1, 64), true
		return
	}
	o.marshal(f)
}

func (o *jsonOut) time(t time.Time) {
	o.b = append(o.b, '"')
	b, err := t.AppendText(o.b)
	if err != nil {
		o.marshal(t) // for its error
		return
	}
	o.b, o.comma = append(b, '"'), true
}

// Members: omitempty and omitzero as the records' tags say.

func (o *jsonOut) strMember(name, s string, omitEmpty bool) {
	if s != "" || !omitEmpty {
		o.key(name)
		o.str(s)
	}
}

func (o *jsonOut) uintMember(name string, n uint64, omitEmpty bool) {
	if n != 0 || !omitEmpty {
		o.key(name)
		o.uint(n)
	}
}

func (o *jsonOut) intMember(name string, n int64, omitEmpty bool) {
	if n != 0 || !omitEmpty {
		o.key(name)
		o.int(n)
	}
}

func (o *jsonOut) floatMember(name string, f float64, omitEmpty bool) {
	if f != 0 || !omitEmpty {
		o.key(name)
		o.float(f)
	}
}

func (o *jsonOut) boolMember(name string, v bool) {
	if v {
		o.key(name)
		o.bool(v)
	}
}

func (o *jsonOut) timeMember(name string, t time.Time, omitZero bool) {
	if !t.IsZero() || !omitZero {
		o.key(name)
		o.time(t)
	}
}

// countsMember is a map[string]uint64 with omitempty.
func (o *jsonOut) countsMember(name string, m map[string]uint64) { members(o, name, m, o.uint) }

func (o *jsonOut) strings(name string, s []string, omitEmpty bool) {
	if omitEmpty && len(s) == 0 {
		return
	}
	o.key(name)
	if s == nil {
		o.b, o.comma = append(o.b, "null"...), true
		return
	}
	o.open('[')
	for _, v := range s {
		o.elem()
		o.str(v)
	}
	o.close(']')
}

// list writes s, omitted when empty, each element by write.
func list[T any](o *jsonOut, name string, s []T, write func(*T)) {
	if len(s) == 0 {
		return
	}
	o.key(name)
	o.open('[')
	for i := range s {
		o.elem()
		write(&s[i])
	}
	o.close(']')
}

// records writes a map of records, omitted when empty.
func records[T any](o *jsonOut, name string, m map[string]*T, write func(*T)) {
	members(o, name, m, func(v *T) {
		if v == nil {
			o.b, o.comma = append(o.b, "null"...), true
			return
		}
		write(v)
	})
}

// members writes a map, omitted when empty, its keys sorted as
// encoding/json sorts them.
func members[V any](o *jsonOut, name string, m map[string]V, write func(V)) {
	if len(m) == 0 {
		return
	}
	o.key(name)
	o.open('{')
	keys := make([]string, 0, len(m)) // slices.Sorted(maps.Keys(m)) grew it from nothing
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.elem()
		o.str(k)
		o.b = append(o.b, ':')
		write(m[k])
	}
	o.close('}')
}

// appendEntry appends e as json.Marshal(e) would.
func appendEntry(b []byte, e *entry) ([]byte, error) {
	o := &jsonOut{b: b}
	o.open('{')
	if e.jobs != nil {
		o.lazyJobs(e.jobs)
	} else {
		records(o, "jobs", e.Jobs, o.job)
	}
	o.strings("removed_jobs", e.RemovedJobs, true)
	records(o, "sources", e.Sources, o.source)
	o.strings("removed_sources", e.RemovedSources, true)
	records(o, "retired", e.Retired, o.source)
	o.boolMember("retired_none", e.RetiredNone)
	o.boolMember("end", e.End)
	o.timeMember("written", e.Written, true)
	o.close('}')
	if o.err != nil {
		return b, fmt.Errorf("encoding state: %w", o.err)
	}
	return o.b, nil
}

// lazyJobs writes jobs as records writes a map of them, omitted when
// empty.
func (o *jsonOut) lazyJobs(jobs *lazyJobs) {
	if len(jobs.names) == 0 {
		return
	}
	o.key("jobs")
	o.open('{')
	for _, n := range jobs.names {
		o.elem()
		o.str(n)
		o.b = append(o.b, ':')
		if r := jobs.record(n); r != nil {
			o.job(r)
		} else {
			o.b, o.comma = append(o.b, "null"...), true
		}
	}
	o.close('}')
}

func (o *jsonOut) job(r *jobRecord) {
	o.open('{')
	o.timeMember("first_watched", r.FirstWatched, true)
	o.timeMember("last_start", r.LastStart, true)
	o.timeMember("last_success", r.LastSuccess, true)
	o.timeMember("last_success_start", r.LastSuccessStart, true)
	o.timeMember("last_failure", r.LastFailure, true)
	o.timeMember("last_unknown", r.LastUnknown, true)
	o.timeMember("last_unknown_start", r.LastUnknownStart, true)
	o.optFloat("last_duration", r.LastDuration)
	o.boolMember("has_last_duration", r.HasLastDuration)
	o.optInt("last_exit_code", r.LastExitCode)
	o.boolMember("has_last_exit_code", r.HasLastExitCode)
	o.uintMember("consecutive_failures", r.ConsecutiveFailures, true)
	o.uintMember("consecutive_skips", r.ConsecutiveSkips, true)
	o.uintMember("consecutive_missed", r.ConsecutiveMissed, true)
	o.countsMember("runs", r.Runs)
	o.uintMember("skips", r.Skips, true)
	o.countsMember("skips_by_reason", r.SkipsByReason)
	o.countsMember("lock_lost", r.LockLost)
	o.uintMember("overlaps", r.Overlaps, true)
	if !r.Durations.IsZero() {
		o.key("durations")
		o.histogram(&r.Durations)
	}
	list(o, "lost_runs", r.LostRuns, o.runKey)
	o.uintMember("missed", r.Missed, true)
	o.uintMember("unexpected", r.Unexpected, true)
	o.countsMember("duplicates", r.Duplicates)
	o.timeMember("slots_checked_until", r.SlotsCheckedUntil, true)
	list(o, "recent_slots", r.RecentSlots, o.slot)
	if r.Sources != nil { // omitzero
		o.strings("sources", r.Sources, false)
	}
	list(o, "open", r.Open, o.run)
	list(o, "recent", r.Recent, o.recent)
	list(o, "duration_history", r.DurationHistory, func(f *float64) { o.float(*f) })
	list(o, "recent_added", r.RecentAdded, o.recent)
	o.optInt("recent_count", r.RecentCount)
	list(o, "duration_history_added", r.DurationHistoryAdded, func(f *float64) { o.float(*f) })
	o.optInt("duration_history_count", r.DurationHistoryCount)
	o.floatMember("lock_ttl_seconds", r.LockTTL, true)
	o.timeMember("decided_until", r.DecidedUntil, true)
	list(o, "pending", r.Pending, o.held)
	o.boolMember("held_only", r.HeldOnly)
	o.boolMember("discovered", r.Discovered)
	o.timeMember("retired", r.Retired, true)
	o.timeMember("resumed", r.Resumed, true)
	o.paused(&r.pausedRecord)
	o.close('}')
}

func (o *jsonOut) histogram(h *histogramRecord) {
	o.open('{')
	list(o, "counts", h.Counts, func(n *uint64) { o.uint(*n) })
	list(o, "native", h.Native, func(b *[2]int64) {
		o.open('[')
		o.elem()
		o.int(b[0])
		o.elem()
		o.int(b[1])
		o.close(']')
	})
	o.uintMember("zero", h.Zero, true)
	o.floatMember("sum", h.Sum, false)
	o.uintMember("count", h.Count, false)
	o.close('}')
}

func (o *jsonOut) runKey(k *runKeyRecord) {
	o.open('{')
	o.strMember("run_id", k.RunID, true)
	o.strMember("host", k.Host, true)
	o.intMember("pid", int64(k.PID), true)
	o.close('}')
}

func (o *jsonOut) slot(s *slotRecord) {
	o.open('{')
	o.timeMember("slot", s.Slot, false)
	o.strings("hosts", s.Hosts, false)
	o.close('}')
}

func (o *jsonOut) run(r *runRecord) {
	o.open('{')
	o.key("key")
	o.runKey(&r.Key)
	o.strMember("run_id", r.RunID, true)
	o.strMember("host", r.Host, true)
	o.intMember("pid", int64(r.PID), true)
	o.timeMember("start", r.Start, false)
	o.strMember("source", r.Source, false)
	o.timeMember("slot", r.Slot, true)
	o.boolMember("overlapped", r.Overlapped)
	o.intMember("lease", int64(r.Lease), true)
	o.boolMember("end_unlogged", r.EndUnlogged)
	o.close('}')
}

func (o *jsonOut) recent(r *recentRecord) {
	o.open('{')
	o.timeMember("start", r.Start, true)
	o.timeMember("end", r.End, false)
	o.optFloat("duration_seconds", r.Duration)
	o.strMember("result", r.Result, false)
	o.strMember("host", r.Host, true)
	o.intMember("pid", int64(r.PID), true)
	o.optInt("exit_code", r.ExitCode)
	o.strMember("reason", r.Reason, true)
	o.strMember("lock", r.Lock, true)
	o.strMember("holder", r.Holder, true)
	o.strMember("output", r.Output, true)
	o.strMember("output_ref", r.OutputRef, true)
	o.boolMember("overlapped", r.Overlapped)
	o.close('}')
}

func (o *jsonOut) held(r *heldRecord) {
	o.open('{')
	o.strMember("source", r.Source, true)
	o.timeMember("time", r.Time, true)
	o.strMember("kind", r.Kind, false)
	o.strMember("host", r.Host, true)
	o.intMember("pid", int64(r.PID), true)
	o.strMember("run_id", r.RunID, true)
	o.strMember("result", r.Result, true)
	o.optInt("exit_code", r.ExitCode)
	o.optFloat("duration_seconds", r.Duration)
	o.strMember("reason", r.Reason, true)
	o.strMember("skip_label", r.SkipLabel, true)
	o.strMember("lock", r.Lock, true)
	o.strMember("holder", r.Holder, true)
	o.intMember("holder_pid", int64(r.HolderPID), true)
	o.floatMember("lock_ttl_seconds", r.LockTTL, true)
	o.strMember("output", r.Output, true)
	o.strMember("output_ref", r.OutputRef, true)
	o.boolMember("end_unlogged", r.EndUnlogged)
	o.boolMember("as_before", r.AsBefore)
	o.close('}')
}

func (o *jsonOut) source(r *sourceRecord) {
	o.open('{')
	o.uintMember("records", r.Records, false)
	o.uintMember("parse_errors", r.ParseErrors, false)
	o.uintMember("unknown_job", r.UnknownJob, false)
	o.uintMember("position_resets", r.PositionResets, false)
	o.uintMember("late_records", r.LateRecords, true)
	if len(r.Position) > 0 {
		o.key("position")
		o.raw(r.Position)
	}
	o.strMember("identity", r.Identity, true)
	o.timeMember("retired", r.Retired, true)
	o.close('}')
}

// raw appends a RawMessage as encoding/json does (compacted, HTML
// escaped): a source's position, once a commit.
func (o *jsonOut) raw(m json.RawMessage) { o.marshal(m) }

func (o *jsonOut) optInt(name string, n *int) {
	if n != nil {
		o.key(name)
		o.int(int64(*n))
	}
}

func (o *jsonOut) optFloat(name string, f *float64) {
	if f != nil {
		o.key(name)
		o.float(*f)
	}
}
