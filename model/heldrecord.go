package model

import (
	"cmp"
	"time"
)

// Held is a record the model holds for its job's watermark, with the
// source that handed it over, in 88 bytes rather than an Event's 232: at
// 50,000 jobs a catch-up holds some 140,000 of them (nearly every record
// near a log's end waits for the watermark). The time is Unix nanoseconds
// with its zone as a small index, the result a small code, and what most
// records lack (a skip's reason, a lock, an output, values that do not fit
// the small fields) is behind one pointer, so every Event comes back as it
// was held. It leaves out the job's name: its job holds it.
type Held struct {
	ns     int64 // Event.Time as Unix nanoseconds, in zone
	dur    time.Duration
	host   string
	runID  string
	source string
	more   *heldMore // nil for most records
	pid    int32
	exit   int32
	kind   Kind
	result uint8 // heldResults, or wideHeldResult
	flags  uint8
	zone   uint8
}

// heldMore is what few held records have.
type heldMore struct {
	reason, skipLabel, lock, holder, output, outputRef string
	holderPID                                          int
	lockTTL                                            time.Duration
	wide                                               *heldWide
}

// heldWide holds the values of a record that do not fit its small fields.
type heldWide struct {
	time      time.Time
	pid, exit int
	result    Result
}

const (
	heldHasExitCode uint8 = 1 << iota
	heldHasDuration
	heldEndUnlogged
	heldLate
	heldWideTime // time, pid, exit code, result: in more.wide
	heldWidePID
	heldWideExit
)

// heldResults are the results a Held holds as a code (its index); a
// result not listed is kept whole.
var heldResults = [...]Result{"", Success, Failure, Timeout, Skipped, Unknown}

const wideHeldResult = uint8(len(heldResults))

// NewHeld makes a Held of ev, read by source; ev.Job is not kept.
func NewHeld(ev *Event, source string) Held {
	h := Held{dur: ev.Duration, host: ev.Host, runID: ev.RunID, source: source, kind: ev.Kind, result: wideHeldResult}
	for i, res := range heldResults {
		if res == ev.Result {
			h.result = uint8(i)
			break
		}
	}
	for _, f := range [...]struct {
		set  bool
		flag uint8
	}{{ev.HasExitCode, heldHasExitCode}, {ev.HasDuration, heldHasDuration}, {ev.EndUnlogged, heldEndUnlogged}, {ev.late, heldLate}} {
		if f.set {
			h.flags |= f.flag
		}
	}
	var w heldWide
	var ok bool
	if h.ns, h.zone, ok = packTime(ev.Time); !ok {
		h.flags |= heldWideTime
		w.time = ev.Time
	}
	if h.pid = int32(ev.PID); int(h.pid) != ev.PID {
		h.flags |= heldWidePID
		w.pid = ev.PID
	}
	if h.exit = int32(ev.ExitCode); int(h.exit) != ev.ExitCode {
		h.flags |= heldWideExit
		w.exit = ev.ExitCode
	}
	wide := h.flags&(heldWideTime|heldWidePID|heldWideExit) != 0 || h.result == wideHeldResult
	if wide {
		w.result = ev.Result
	}
	if ev.Reason != "" || ev.SkipLabel != "" || ev.Lock != "" || ev.Holder != "" || ev.HolderPID != 0 ||
		ev.LockTTL != 0 || ev.Output != "" || ev.OutputRef != "" || wide {
		h.more = &heldMore{reason: ev.Reason, skipLabel: ev.SkipLabel, lock: ev.Lock, holder: ev.Holder,
			holderPID: ev.HolderPID, lockTTL: ev.LockTTL, output: ev.Output, outputRef: ev.OutputRef}
		if wide {
			w := w // a copy on the heap only for a wide record: most are not
			h.more.wide = &w
		}
	}
	return h
}

// Event spells h out, without its job's name (Event.Job is empty).
func (h *Held) Event() Event {
	ev := Event{Time: h.Time(), Kind: h.kind, Host: h.host, PID: h.PID(), RunID: h.runID, Result: h.Result(),
		ExitCode: int(h.exit), Duration: h.dur,
		HasExitCode: h.flags&heldHasExitCode != 0, HasDuration: h.flags&heldHasDuration != 0,
		EndUnlogged: h.flags&heldEndUnlogged != 0, late: h.flags&heldLate != 0}
	if m := h.more; m != nil {
		ev.Reason, ev.SkipLabel, ev.Lock, ev.Holder = m.reason, m.skipLabel, m.lock, m.holder
		ev.HolderPID, ev.LockTTL, ev.Output, ev.OutputRef = m.holderPID, m.lockTTL, m.output, m.outputRef
		if h.flags&heldWideExit != 0 {
			ev.ExitCode = m.wide.exit
		}
	}
	return ev
}

// Source is the name of the source that read the record.
func (h *Held) Source() string { return h.source }

// Kind is the record's kind.
func (h *Held) Kind() Kind { return h.kind }

// Time is when the record says it happened.
func (h *Held) Time() time.Time {
	if h.flags&heldWideTime != 0 {
		return h.more.wide.time
	}
	return unpackTime(h.ns, h.zone)
}

// PID is the record's process ID (0: unknown).
func (h *Held) PID() int {
	if h.flags&heldWidePID != 0 {
		return h.more.wide.pid
	}
	return int(h.pid)
}

// Result is how the run the record ends ended (End only).
func (h *Held) Result() Result {
	if h.result < wideHeldResult {
		return heldResults[h.result]
	}
	return h.more.wide.result
}

// declines is declines of h's record.
func (h *Held) declines() bool {
	return h.kind == End && h.Result() == Skipped || h.kind == Skip && h.runID != ""
}

// compareHeld is compareEvents, then by source.
func compareHeld(a, b *Held) int {
	var c int
	if (a.flags|b.flags)&heldWideTime == 0 {
		c = cmp.Compare(a.ns, b.ns)
	} else {
		c = a.Time().Compare(b.Time())
	}
	if c != 0 {
		return c
	}
	if c = compareRunKind(a, b.runID, b.host, b.PID(), b.kind); c != 0 {
		return c
	}
	ev := b.Event() // the same instant, run and kind: rare, spelled out
	return compareHeldTo(a, &ev, b.source)
}

// compareHeldTo is compareHeld of a and the record ev of source, which is
// not held (yet).
func compareHeldTo(a *Held, ev *Event, source string) int {
	if c := a.Time().Compare(ev.Time); c != 0 {
		return c
	}
	if c := compareRunKind(a, ev.RunID, ev.Host, ev.PID, ev.Kind); c != 0 {
		return c
	}
	aev := a.Event()
	return cmp.Or(compareEvents(&aev, ev), cmp.Compare(a.source, source))
}

// compareRunKind is compareEvents of records of one instant as far as
// their runs and kinds go.
func compareRunKind(a *Held, runID, host string, pid int, kind Kind) int {
	if apid := a.PID(); a.runID != runID || a.host != host || apid != pid {
		return cmp.Or(cmp.Compare(a.runID, runID), cmp.Compare(a.host, host), cmp.Compare(apid, pid))
	}
	return cmp.Compare(kindRank(a.kind), kindRank(kind))
}
