package model

import (
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// Duplicate kinds: the kind label of jobwatch_job_duplicate_runs_total.
const (
	// DupOverlap: a second run of one slot on the same host started while
	// the first was still in progress.
	DupOverlap = "overlap"
	// DupDoubleTrigger: a second run of one slot on the same host after the
	// first ended (cron and a timer both configured, a Persistent timer
	// catching up after boot, a manual rerun).
	DupDoubleTrigger = "double_trigger"
	// DupMultiHost: a cluster-scope job run in one slot on another host.
	DupMultiHost = "multi_host"
)

// DuplicateKinds lists the kinds in the order metrics are emitted.
var DuplicateKinds = []string{DupOverlap, DupDoubleTrigger, DupMultiHost}

const (
	// recentSlots bounds how many slots remember which hosts ran in them:
	// enough for records that arrive a little out of order.
	recentSlots = 8
	// maxSlotWalk bounds one accounting walk over missed slots, which
	// missedHorizon keeps to about maxMissedHorizon.
	maxSlotWalk = 2 * maxMissedHorizon
)

// SlotRuns is an expected run time and the hosts whose runs belong to it. A
// host appears once for each run it had in the slot, up to the slot's
// multiplicity (schedule.Runs: cron's catch-up after a jump forward starts
// several runs at one instant); runs beyond that are duplicates and are not
// listed.
type SlotRuns struct {
	Slot  time.Time
	Hosts []string
}

// calendar returns the job's schedule when it has a grid of expected runs
// (cron, OnCalendar); a fixed period has none, and so no slots.
func (j *job) calendar() schedule.Schedule {
	if _, every := j.spec.Schedule.(schedule.Every); every || j.spec.Schedule == nil {
		return nil
	}
	return j.spec.Schedule
}

// attribute assigns a starting run to its expected slot: the last expected
// run at or before its start, if it started within grace of it. It counts
// unexpected runs, duplicates, and the slots before it that had no run.
func (j *job) attribute(r *Run) {
	sched := j.calendar()
	if sched == nil {
		return
	}
	p := sched.Prev(r.Start.Time())
	if p.IsZero() || r.Start.Time().Sub(p) > j.spec.Grace && !(j.spec.Persistent && !j.slotFilled(p)) {
		j.Unexpected++
		// It started all the same: the slots missed before it are
		// counted before it, and none since.
		if !j.SlotsCheckedUntil.IsZero() {
			j.accountMissed(sched, j.missedCutoff(sched, r.Start.Time()))
		}
		j.ConsecutiveMissed = 0
		return
	}
	r.Slot = StampOf(p)
	j.reachSlot(sched, p)
	i := slices.IndexFunc(j.RecentSlots, func(s SlotRuns) bool { return s.Slot.Equal(p) })
	if i < 0 {
		j.RecentSlots = append(j.RecentSlots, SlotRuns{Slot: p})
		slices.SortFunc(j.RecentSlots, func(a, b SlotRuns) int { return a.Slot.Compare(b.Slot) })
		if len(j.RecentSlots) > recentSlots {
			j.RecentSlots = j.RecentSlots[len(j.RecentSlots)-recentSlots:]
		}
		if i = slices.IndexFunc(j.RecentSlots, func(s SlotRuns) bool { return s.Slot.Equal(p) }); i < 0 {
			return // older than every slot remembered
		}
	}
	s := &j.RecentSlots[i]
	mine := countHost(s.Hosts, r.Host)
	switch {
	case mine >= schedule.Runs(sched, p):
		kind := DupDoubleTrigger
		for _, o := range j.runs.open {
			if o != r && o.Host == r.Host && o.Slot.Equal(p) {
				kind = DupOverlap
				break
			}
		}
		j.countDuplicate(kind)
		return
	case len(s.Hosts) > mine && j.spec.Scope == "cluster":
		j.countDuplicate(DupMultiHost)
	}
	s.Hosts = append(s.Hosts, r.Host)
}

// missedCutoff is the time up to which slots are decided missed once the
// job has decided up to to: those whose grace has ended; for a Persistent=
// timer, whose catch-up runs a missed elapse late, any time before the
// next one, those whose next elapse's grace has ended.
func (j *job) missedCutoff(sched schedule.Schedule, to time.Time) time.Time {
	until := to.Add(-j.spec.Grace)
	if !j.spec.Persistent {
		return until
	}
	last := sched.Prev(until)
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(-time.Nanosecond)
}

// slotFilled reports whether slot p had a run or a skip already.
func (j *job) slotFilled(p time.Time) bool {
	return slices.ContainsFunc(j.RecentSlots, func(s SlotRuns) bool { return s.Slot.Equal(p) })
}

// reachSlot counts the slots before p that had no run as missed, now that a
// run (or skip) of slot p came, and the consecutive ones from p on.
func (j *job) reachSlot(sched schedule.Schedule, p time.Time) {
	if j.SlotsCheckedUntil.IsZero() {
		// The job's known history begins with this run.
		j.SlotsCheckedUntil = StampOf(p)
	}
	if j.SlotsCheckedUntil.Before(p) {
		j.accountMissed(sched, p.Add(-time.Nanosecond))
		j.SlotsCheckedUntil = StampOf(p)
	}
	j.ConsecutiveMissed = 0
}

// countDuplicate counts a duplicate run of kind.
func (j *job) countDuplicate(kind string) {
	j.DupCounts[slices.Index(DuplicateKinds, kind)]++
}

func countHost(hosts []string, h string) int {
	n := 0
	for _, x := range hosts {
		if x == h {
			n++
		}
	}
	return n
}

// attributeSkip fills the expected run a skip belongs to (the last one at or
// before it, if within grace): that slot was due and the scheduler started
// the job, which declined to run. It is neither missed nor a run, so it
// joins the slots remembered without a host; runs in it are counted as
// usual.
func (j *job) attributeSkip(at time.Time) {
	sched := j.calendar()
	if sched == nil {
		return
	}
	p := sched.Prev(at)
	if p.IsZero() || at.Sub(p) > j.spec.Grace {
		return
	}
	j.reachSlot(sched, p)
	if slices.ContainsFunc(j.RecentSlots, func(s SlotRuns) bool { return s.Slot.Equal(p) }) {
		return
	}
	j.RecentSlots = append(j.RecentSlots, SlotRuns{Slot: p})
	slices.SortFunc(j.RecentSlots, func(a, b SlotRuns) int { return a.Slot.Compare(b.Slot) })
	if len(j.RecentSlots) > recentSlots {
		j.RecentSlots = j.RecentSlots[len(j.RecentSlots)-recentSlots:]
	}
}

// accountMissed counts the expected runs after SlotsCheckedUntil and up to
// until that no run belongs to, and moves SlotsCheckedUntil on. A slot
// without any run counts as many missed runs as its multiplicity, or as
// many unjudged ones when it fell in a pause or window (pause.go); a slot
// with fewer runs than that is not counted (its first run moved
// SlotsCheckedUntil past it).
func (j *job) accountMissed(sched schedule.Schedule, until time.Time) {
	tally := j.missedUntil(sched, until)
	j.Missed += tally.missed
	j.ConsecutiveMissed += tally.missed
	if tally.unjudged != [3]uint64{} {
		p := ownPauses(j.JobState)
		for i, n := range tally.unjudged {
			p.Unjudged[i] += n
		}
	}
	j.SlotsCheckedUntil = StampOf(tally.checked)
	j.Pauses.prune(j.SlotsCheckedUntil.Time())
}

// slotTally is what accountMissed adds and where it moves
// SlotsCheckedUntil.
type slotTally struct {
	missed   uint64
	unjudged [3]uint64 // by UnjudgedReasons
	checked  time.Time
}

// missedUntil is what accountMissed would add to Missed and move
// SlotsCheckedUntil to, without changing the job.
func (j *job) missedUntil(sched schedule.Schedule, until time.Time) (tally slotTally) {
	checked := j.SlotsCheckedUntil.Time()
	if from, far := missedHorizon(sched, checked, until); far {
		checked = from
	}
	for range maxSlotWalk {
		t := sched.Next(checked)
		if t.IsZero() || t.After(until) {
			break
		}
		if !slices.ContainsFunc(j.RecentSlots, func(s SlotRuns) bool { return s.Slot.Equal(t) }) {
			if why := j.Pauses.unjudgedAt(j.spec, t); why >= 0 {
				tally.unjudged[why] += uint64(schedule.Runs(sched, t))
			} else {
				tally.missed += uint64(schedule.Runs(sched, t))
			}
		}
		checked = t
	}
	tally.checked = checked
	return tally
}

// missedHorizon: when more than maxMissedHorizon expected runs lie after
// from and up to until, far is true and start is the instant just before
// the earliest of the last maxMissedHorizon of them, from which missed runs
// are counted instead (a first record dated years ago would otherwise count
// millions of missed runs).
func missedHorizon(sched schedule.Schedule, from, until time.Time) (start time.Time, far bool) {
	t := from
	for range maxMissedHorizon + 1 {
		if t = sched.Next(t); t.IsZero() || t.After(until) {
			return time.Time{}, false
		}
	}
	p := sched.Prev(until)
	for range maxMissedHorizon - 1 {
		q := sched.Prev(p.Add(-time.Nanosecond))
		if q.IsZero() || !q.After(from) {
			break
		}
		p = q
	}
	return p.Add(-time.Nanosecond), true
}
