package model

import (
	"cmp"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/internal/ratelog"
	"github.com/jobwatch/jobwatch/schedule"
)

// Event time. A job's verdicts (which slot ran, was skipped or missed,
// which runs overlapped, which start an end closes) depend on the records'
// own times, never on the order in which sources hand them over. A record
// is held in its job's pending list, sorted by time, until every source
// that reports the job has read past it (the job's watermark); then the
// records before the watermark are applied in time order, and the slots
// whose grace ends before it are decided. A decision is final and saved
// with the records still pending, so no counter goes back; a record dated
// before what is decided already (later than its source's late window
// allows) is late: applied where it can be, counted, and never reopens a
// slot. docs/schedules.md, "Event time and watermarks".

const (
	// maxPending bounds a job's records held while a source that reports
	// it has read nothing since the start (it is down): past it, once the
	// start-up hold is over, the oldest are decided anyway, up to the
	// watermark of the sources that have read. A job's held records are
	// saved with it at every save.
	maxPending = 1024
	// maxMissedHorizon bounds how many expected runs are counted missed at
	// once: a job whose first record is dated years ago, or a source down
	// for months, counts at most its last maxMissedHorizon slots.
	maxMissedHorizon = 1000
)

// sourceClock is what the model knows of a source's progress in event time
// since the current configuration started it.
type sourceClock struct {
	runs   bool
	window time.Duration
	// reported: a batch came since the configuration started; endedOnce:
	// one of them said the source had read to its end.
	reported, endedOnce bool
	atEnd               bool
	vouched             time.Time // the last batch's Watermark (zero: none)
	down                bool      // SetHealth said so: the watermark stays
	seen                time.Time // the latest record time handed over
	mark                time.Time // the watermark as last computed
	sinceEnd            int       // records handed over since the last batch at its end
}

// watermark is the time before which the source will hand over no more
// records: the clock less its window while it is at its end (or what its
// last batch vouched for, Batch.Watermark, when it did), else the
// latest record it has handed over (the clock at most: a host ahead dates
// its records in the future) less its window; held where it was
// while the source is down. During the start-up hold (startingUp) it does
// not follow the clock: a source that says it is at its end may not be yet
// (a replica behind, a journal not flushed), so what it has handed over is
// all it vouches for. ok is false until the source has reported.
func (c *sourceClock) watermark(now time.Time, startingUp bool) (time.Time, bool) {
	if !c.reported {
		return time.Time{}, false
	}
	if !c.down {
		// Never past the clock, whatever a host ahead dated its records.
		w := c.seen
		if w.After(now) {
			w = now
		}
		w = w.Add(-c.window)
		if c.atEnd && !startingUp {
			w = now.Add(-c.window)
			if !c.vouched.IsZero() {
				w = c.vouched // what the source can still hand over
				if w.After(now) {
					w = now
				}
			}
		}
		if w.After(c.mark) {
			c.mark = w
		}
	}
	return c.mark, true
}

// reporting are the sources whose watermarks a job's decisions wait for:
// those that have reported it, and every source of runs that has not read
// to its end once since the configuration started it (it may hold records
// of the job; every source, for a job none has reported). After
// firstReadGrace, a source that has read nothing at all since is taken for
// one that holds no record of jobs it never reported (a run log that
// cannot be opened would hold them back for ever).
func (t *Tracker) reporting(j *job, now time.Time, yield func(*source)) {
	// The sources not at their end yet are kept aside (none, mostly): a
	// reap looks at every job, and walking every source for each was most
	// of its cost with hundreds of sources.
	if t.unended == nil {
		t.unended = []*source{}
		for _, src := range t.sources {
			if src.clock.runs && !src.clock.endedOnce {
				t.unended = append(t.unended, src)
			}
		}
	}
	if now.Sub(t.started) < t.opts.StartupHold {
		// During the hold any source may still hand over records of any
		// job, on time whatever their age (a log written in the first
		// seconds after the start).
		for _, src := range t.sources {
			if src.clock.runs {
				yield(src)
			}
		}
		return
	}
	firstRead := t.firstReading(now)
	n := 0
	for _, name := range j.Sources {
		if src := t.sources[name]; src != nil && src.clock.runs {
			yield(src)
			n++
		}
	}
	if n == 0 {
		for _, src := range t.sources {
			if src.clock.waitedFor(false, firstRead) {
				yield(src)
			}
		}
		return
	}
	for _, src := range t.unended {
		if src.clock.waitedFor(true, firstRead) && !slices.ContainsFunc(j.Sources, func(name string) bool { return t.sources[name] == src }) {
			yield(src)
		}
	}
}

// firstReading: a source is given this long after Configure (or the
// start-up hold, if longer) to read anything at all before it is taken for
// one that holds none of the records of jobs it never reported; sources
// start reading at once, and one a few milliseconds behind another would
// otherwise miss the jobs' first decisions.
const firstReadGrace = 10 * time.Second

func (t *Tracker) firstReading(now time.Time) bool {
	return now.Sub(t.started) < max(t.opts.StartupHold, firstReadGrace)
}

// waitedFor is reporting's rule, after the start-up hold, for a source
// that has not reported the job (one of runs that has is always waited
// for): reported says a source of runs has reported the job, anyRead
// that a source that has read nothing yet is waited for all the same
// (within firstReadGrace).
func (c *sourceClock) waitedFor(reported, anyRead bool) bool {
	if !c.runs {
		return false
	}
	may := anyRead || c.reported
	if !reported {
		return c.endedOnce || may
	}
	return !c.endedOnce && may
}

// DecisionsBehind is how far behind now the job's decisions are: now less
// the lowest watermark of the sources that report it (sources are the
// saved sources' views), or less what it has decided while one of them has
// not read to its end since it started. A source down, or catching up,
// holds it back; about the sources' late windows is its usual value.
func (v *JobView) DecisionsBehind(sources []*SourceView, now time.Time) time.Duration {
	clock := func(name string) *sourceClock {
		for _, s := range sources {
			if s.Name == name {
				c := s.clock // a copy: watermark moves its mark on
				return &c
			}
		}
		return nil
	}
	// The sources reporting's rule waits for, as if every source had had
	// its firstReadGrace: a view does not know when they started.
	var waited []*sourceClock
	for _, name := range v.Sources {
		if c := clock(name); c != nil && c.runs {
			waited = append(waited, c)
		}
	}
	reported := len(waited) > 0
	for _, s := range sources {
		if !slices.Contains(v.Sources, s.Name) && s.clock.waitedFor(reported, true) {
			c := s.clock
			waited = append(waited, &c)
		}
	}
	mark, some, held := time.Time{}, false, false
	for _, c := range waited {
		w, ok := c.watermark(now, false)
		held = held || !ok || !c.endedOnce
		if ok && (!some || w.Before(mark)) {
			mark, some = w, true
		}
	}
	switch {
	case held:
		mark = v.DecidedUntil
		if mark.IsZero() {
			mark = v.FirstWatched
		}
	case !some:
		return 0 // no source of runs: nothing to wait for
	}
	return max(now.Sub(mark), 0)
}

// decidable is how far a job's decisions may go now: the lowest watermark
// of the sources that report it (the clock when no source of runs is
// configured). During the start-up hold (Options.StartupHold after
// Configure) no watermark follows the clock, and nothing is decided while
// one of those sources has read nothing yet. A job that holds more than
// maxPending records has the oldest decided anyway, up to the lowest
// watermark of the sources that have read a record (one that has read none
// yet, or is down since the start, could otherwise hold a backlog in
// memory, and in every save, without bound), once every source has started
// reading or had firstReadGrace to. ok is false while nothing may be
// decided.
func (t *Tracker) decidable(j *job, now time.Time) (time.Time, bool) {
	return t.decidableBy(j, now, true)
}

// decidableBy is decidable; force says whether a job holding more than
// maxPending records has the oldest decided anyway.
func (t *Tracker) decidableBy(j *job, now time.Time, force bool) (time.Time, bool) {
	startingUp := now.Sub(t.started) < t.opts.StartupHold
	var mark, readMark time.Time
	some, reported, someRead := false, true, false
	t.reporting(j, now, func(src *source) {
		w, ok := src.clock.watermark(now, startingUp)
		if !ok {
			reported = false
			return
		}
		if !some || w.Before(mark) {
			mark, some = w, true
		}
		if !src.clock.seen.IsZero() && (!someRead || w.Before(readMark)) {
			readMark, someRead = w, true
		}
	})
	to, ok := mark, reported && some
	if reported && !some && !startingUp { // no source of runs: nothing can arrive late
		to, ok = now, true
	}
	// Not while a source has not even started reading, in its first
	// seconds: it may hold older records than any.
	if force && len(j.pending) > maxPending && someRead && (reported || !t.firstReading(now)) {
		forced := j.pending[len(j.pending)-maxPending].Time
		if readMark.Before(forced) {
			forced = readMark
		}
		if !ok || forced.After(to) {
			t.opts.Logger.Warn("deciding a job's oldest records before a source that has read none has: too many held", ratelog.Per("job"), "job", j.spec.Name, "held", len(j.pending), "limit", maxPending, "until", forced)
			to, ok = forced, true
		}
	}
	return to, ok
}

// decide applies the job's pending records dated up to to, in time order,
// closes the runs that outlived the job's timeout by then, and counts the
// slots whose grace ended by then that had no run. A job whose decisions
// only move on in time, with nothing applied, lost or counted, is not
// copied or marked changed: every job is decided every few seconds.
func (t *Tracker) decide(j *job, to time.Time) {
	if to.Before(j.decided) {
		return
	}
	j.decided = to // an equal to still applies records held at that instant
	sched := j.calendar()
	due := len(j.pending) > 0 && !j.pending[0].Time.After(to) ||
		j.spec.Timeout > 0 && slices.ContainsFunc(j.open, func(r *Run) bool { return t.timeoutDue(j, r, to) }) ||
		t.abandonDue(j, to)
	if !due && sched != nil {
		if j.SlotsCheckedUntil.IsZero() {
			due = true
		} else if tally := j.missedUntil(sched, j.missedCutoff(sched, to)); !tally.checked.Equal(j.SlotsCheckedUntil) {
			due = true
		}
	}
	if !due {
		return
	}
	j.own()
	j.startSlots(sched)
	n := 0
	for n < len(j.pending) && !j.pending[n].Time.After(to) {
		n++
	}
	t.applyPending(j, n)
	t.timeOut(j, to)
	t.abandon(j, to)
	if sched != nil {
		j.accountMissed(sched, j.missedCutoff(sched, to))
	}
	t.markJob(j)
}

// startSlots: slots count from when the job was first watched (or its
// earliest record), whatever record comes first.
func (j *job) startSlots(sched schedule.Schedule) {
	if sched != nil && j.SlotsCheckedUntil.IsZero() {
		j.SlotsCheckedUntil = j.FirstWatched
	}
}

// applyPending applies the job's first n pending records, in their order,
// and lets them go.
func (t *Tracker) applyPending(j *job, n int) {
	if n == 0 {
		return
	}
	for i := range j.pending[:n] {
		h := &j.pending[i]
		t.decideRecord(j, &h.Event, h.Source)
		if declines(&h.Event) {
			j.declining--
		}
	}
	clear(j.pending[:n]) // drop the strings they hold
	j.pending = slices.Delete(j.pending, 0, n)
}

// decideRecord applies a record its job's watermark has passed: the runs
// that outlived the job's timeout or were abandoned by its time are
// closed first.
func (t *Tracker) decideRecord(j *job, ev *Event, source string) {
	t.timeOut(j, ev.Time)
	t.abandon(j, ev.Time)
	if !t.apply(j, ev, source) {
		t.countRepeat(source)
	}
}

// decidedAlready reports whether a record Apply takes may be decided in
// place: its job's records in the batch allow it (batchJob.inPlace) and
// the job's watermark after the batch, without the forcing of a job that
// holds too many, has passed it. Deciding it then is what holding it
// would do at the batch's end: the records before it are applied (the
// batch's are, being in order; those held before, which go before it, are
// applied now), and the decision up to the watermark follows at the end.
func (t *Tracker) decidedAlready(bj *batchJob, ev *Event, now time.Time) bool {
	if !bj.inPlace || t.holdAll {
		return false
	}
	if !bj.toKnown {
		to, ok := t.decidableBy(bj.j, now, false)
		bj.toKnown, bj.inPlace, bj.to = true, ok && !to.Before(bj.j.decided), to
	}
	return bj.inPlace && !ev.Time.After(bj.to)
}

// decideInPlace applies a record decidedAlready allows, after the records
// the job holds (applied with the batch's first such record).
func (t *Tracker) decideInPlace(bj *batchJob, ev *Event, source string) {
	if !bj.deciding {
		bj.deciding = true
		t.applyPending(bj.j, len(bj.j.pending))
		bj.j.startSlots(bj.j.calendar())
	}
	t.decideRecord(bj.j, ev, source)
}

// heldBefore reports whether every record the job holds goes before ev of
// source, as applied.
func (j *job) heldBefore(ev *Event, source string) bool {
	n := len(j.pending)
	if n == 0 {
		return true
	}
	return !j.unsorted && compareHeldTo(&j.pending[n-1], ev, source) <= 0
}

// DecideHeld decides what the watermarks allow now for the jobs that hold
// records, so that a record shows about its source's late window after it
// was read rather than at the next Reap. It looks at no other job, and
// reports whether records are still held: the exporter calls it often
// while they are, from a signal of Held until it reports none.
func (t *Tracker) DecideHeld() (holding bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.deciding()()
	now := t.clock.now()
	memo := decidableMemo{}
	t.holdingPeak = max(t.holdingPeak, len(t.holding))
	for j := range t.holding {
		if t.jobs[j.spec.Name] != j {
			delete(t.holding, j) // removed by a reload
			continue
		}
		t.decideJob(memo, j, now)
		if len(j.pending) == 0 {
			delete(t.holding, j)
		}
	}
	t.shrinkHolding()
	if len(t.holding) == 0 {
		t.heldSignalled = false
		return false
	}
	return true
}

// Held is signalled when records are held for their watermark while none
// was, once until DecideHeld reports that none is: DecideHeld is due until
// then, and not otherwise (a decide tick ten times a second that finds
// nothing held was a fifth of the wake-ups of a stream).
func (t *Tracker) Held() <-chan struct{} { return t.held }

// signalHeld signals Held if records are held and it was not signalled
// since DecideHeld last found none.
func (t *Tracker) signalHeld() {
	if len(t.holding) == 0 || t.heldSignalled {
		return
	}
	t.heldSignalled = true
	select {
	case t.held <- struct{}{}:
	default:
	}
}

// shrinkHolding rebuilds the set of jobs holding records once it holds an
// eighth of what it held at its peak: a map keeps the table of its largest
// size, and a walk visits all of it, so after a catch-up that held 10,000
// jobs every walk over the few jobs a stream holds (here ten times a
// second, and at every batch at a source's end) cost a walk over 10,000.
func (t *Tracker) shrinkHolding() {
	if t.holdingPeak < 64 || len(t.holding)*8 > t.holdingPeak {
		return
	}
	small := make(map[*job]struct{}, len(t.holding))
	for j := range t.holding {
		small[j] = struct{}{}
	}
	t.holding, t.holdingPeak = small, len(small)
}

// decidableMemo is one pass's decidable, by the one source that reports a
// job ("" for none): for such a job it depends on that source alone (the
// forcing of a job holding too many aside), and a reap that computed it
// for each of 10,000 jobs of one run log spent most of its time there
// (and DecideHeld, ten times a second, for each job holding records). A
// pass is one call of Reap, DecideHeld or Apply: the same now, and no
// source's clock moving within it.
type decidableMemo map[string]struct {
	to time.Time
	ok bool
}

// memoKey is the name of the one source that has reported j ("" for
// none), under which what its watermark allows is memoised; false when
// more than one has.
func (j *job) memoKey() (string, bool) {
	switch len(j.Sources) {
	case 0:
		return "", true
	case 1:
		return j.Sources[0], true
	}
	return "", false
}

// decidableIn is decidable(j, now), looked up in memo where it can be.
func (t *Tracker) decidableIn(memo decidableMemo, j *job, now time.Time) (time.Time, bool) {
	key, single := j.memoKey()
	if !single || len(j.pending) > maxPending {
		return t.decidable(j, now)
	}
	if m, ok := memo[key]; ok {
		return m.to, m.ok
	}
	to, ok := t.decidable(j, now)
	memo[key] = struct {
		to time.Time
		ok bool
	}{to, ok}
	return to, ok
}

// decideJob decides what the job's watermark allows now (memo: the
// pass's, see decidableMemo).
func (t *Tracker) decideJob(memo decidableMemo, j *job, now time.Time) {
	if to, ok := t.decidableIn(memo, j, now); ok {
		t.decide(j, to)
	}
}

// timeOut closes as lost, at start plus timeout, the runs whose job's
// timeout ended before at, its source's late window and TimeoutMargin
// too (timeoutDue; in event time: a run whose end is held with the
// records still pending is not closed). A run whose start came late is
// closed only once at has passed the moment it was read: its end, written
// after it, may come a moment later, in the next batch, and the job has
// decided past its timeout already.
func (t *Tracker) timeOut(j *job, at time.Time) {
	if j.spec.Timeout <= 0 {
		return
	}
	for len(j.open) > 0 {
		i := slices.IndexFunc(j.open, func(r *Run) bool {
			return t.timeoutDue(j, r, at) && at.UnixNano() >= r.readLate
		})
		if i < 0 {
			return
		}
		r := j.open[i]
		t.opts.Logger.Info("closing run as lost", "job", j.spec.Name, "host", r.Host, "pid", r.PID, "started", r.Start, "reason", "open longer than the job's timeout")
		t.lose(j, r, r.Start.Add(j.spec.Timeout))
	}
}

// countRepeat counts a record that repeats one applied already (see
// apply) as its source's unreadable record.
func (t *Tracker) countRepeat(source string) {
	if src := t.sources[source]; src != nil {
		src.ParseErrors++
		t.markSource(source)
	}
}

// hold keeps ev in its job's pending records. They are in time order again
// once Apply has handed over its batch (sorted), not after each record: a
// source that reads behind another puts most of its records before those
// of the other, and moving those for each was most of a catch-up's cost.
func (j *job) hold(ev *Event, source string) {
	h := Held{Event: *ev, Source: source}
	if n := len(j.pending); !j.unsorted && n > 0 && compareHeld(&h, &j.pending[n-1]) < 0 {
		j.unsorted, j.sortedLen = true, n
	}
	j.pending = append(j.pending, h)
	if declines(&h.Event) {
		j.declining++
	}
}

// sorted puts the job's pending records in the order they are applied in:
// the records held since the last sort are sorted, then merged with those
// before them, from where they begin among them.
func (j *job) sorted() {
	if !j.unsorted {
		return
	}
	j.unsorted = false
	head, tail := j.pending[:j.sortedLen], j.pending[j.sortedLen:]
	cmpHeld := func(a, b Held) int { return compareHeld(&a, &b) }
	if !slices.IsSortedFunc(tail, cmpHeld) {
		slices.SortFunc(tail, cmpHeld)
	}
	k, _ := slices.BinarySearchFunc(head, &tail[0], func(a Held, b *Held) int { return compareHeld(&a, b) })
	rest := slices.Clone(head[k:]) // what the new records go among
	out := j.pending[k:k]
	for len(rest) > 0 && len(tail) > 0 {
		if compareHeld(&tail[0], &rest[0]) < 0 {
			out, tail = append(out, tail[0]), tail[1:]
		} else {
			out, rest = append(out, rest[0]), rest[1:]
		}
	}
	// out never overtakes tail: it has taken fewer records than rest and
	// tail held together, and tail starts where rest ended.
	out = append(out, rest...)
	_ = append(out, tail...)
}

// kindOrder orders one run's records of one instant: its start before what
// ends it (jobwatch run writes a start and then, when the lock is held, a
// skip of the same run, often in the same millisecond).
var kindOrder = [...]int{Start: 0, LockLost: 1, End: 2, Skip: 3}

func kindRank(k Kind) int {
	if int(k) < len(kindOrder) {
		return kindOrder[k]
	}
	return len(kindOrder)
}

// compareEvents is the order records are applied in: by time, then by run
// and kind, then by everything they hold, so that records of one instant
// are applied in the same order whichever source handed them over first.
func compareEvents(a, b *Event) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if a.RunID != b.RunID || a.Host != b.Host || a.PID != b.PID {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID))
	}
	if c := cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Result, b.Result), cmp.Compare(a.ExitCode, b.ExitCode), compareBool(a.HasExitCode, b.HasExitCode),
		cmp.Compare(a.Duration, b.Duration), compareBool(a.HasDuration, b.HasDuration),
		cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.SkipLabel, b.SkipLabel), cmp.Compare(a.Lock, b.Lock),
		cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.HolderPID, b.HolderPID), cmp.Compare(a.LockTTL, b.LockTTL),
		cmp.Compare(a.Output, b.Output),
		cmp.Compare(a.OutputRef, b.OutputRef),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// compareHeld is compareEvents, then by source.
func compareHeld(a, b *Held) int { return compareHeldTo(a, &b.Event, b.Source) }

// compareHeldTo is compareHeld of a and the record ev of source, which is
// not held (yet).
func compareHeldTo(a *Held, ev *Event, source string) int {
	return cmp.Or(compareEvents(&a.Event, ev), cmp.Compare(a.Source, source))
}
