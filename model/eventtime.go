package model

import (
	"log/slog"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/internal/ratelog"
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

// watermarks are the configured sources, with their clocks, and what
// they allow: how far each job's verdicts may go (decidable). They are
// the orderer's; a pass (one Apply, Reap or DecideHeld) asks them with
// one now, and memoises what one source allows (decidableMemo).
type watermarks struct {
	hold    time.Duration // Options.StartupHold
	logger  *slog.Logger
	started time.Time // of the current configuration
	sources map[string]*source
	// unended are the sources of runs that have not read to their end
	// since Configure; nil: to be found again (see reporting).
	unended []*source
}

// window is the late window of the source name (0: none configured).
func (w *watermarks) window(name string) time.Duration {
	if src := w.sources[name]; src != nil {
		return src.clock.window
	}
	return 0
}

// reporting are the sources whose watermarks a job's decisions wait for:
// those that have reported it, and every source of runs that has not read
// to its end once since the configuration started it (it may hold records
// of the job; every source, for a job none has reported). After
// firstReadGrace, a source that has read nothing at all since is taken for
// one that holds no record of jobs it never reported (a run log that
// cannot be opened would hold them back for ever).
func (w *watermarks) reporting(j *job, now time.Time, yield func(*source)) {
	// The sources not at their end yet are kept aside (none, mostly): a
	// reap looks at every job, and walking every source for each was most
	// of its cost with hundreds of sources.
	if w.unended == nil {
		w.unended = []*source{}
		for _, src := range w.sources {
			if src.clock.runs && !src.clock.endedOnce {
				w.unended = append(w.unended, src)
			}
		}
	}
	if now.Sub(w.started) < w.hold {
		// During the hold any source may still hand over records of any
		// job, on time whatever their age (a log written in the first
		// seconds after the start).
		for _, src := range w.sources {
			if src.clock.runs {
				yield(src)
			}
		}
		return
	}
	firstRead := w.firstReading(now)
	n := 0
	for _, name := range j.Sources {
		if src := w.sources[name]; src != nil && src.clock.runs {
			yield(src)
			n++
		}
	}
	if n == 0 {
		for _, src := range w.sources {
			if src.clock.waitedFor(false, firstRead) {
				yield(src)
			}
		}
		return
	}
	for _, src := range w.unended {
		if src.clock.waitedFor(true, firstRead) && !slices.ContainsFunc(j.Sources, func(name string) bool { return w.sources[name] == src }) {
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

func (w *watermarks) firstReading(now time.Time) bool {
	return now.Sub(w.started) < max(w.hold, firstReadGrace)
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

// behind is how far behind now the source's watermark is, worked out on
// a copy of the clock (watermark moves its mark on); ok is false until
// the source has reported.
func (c sourceClock) behind(now time.Time) (time.Duration, bool) {
	w, ok := c.watermark(now, false)
	if !ok {
		return 0, false
	}
	return max(now.Sub(w), 0), true
}

// DecisionsBehind is how far behind now the source's watermark is: the
// verdicts of a job it reports wait for it (JobView.DecisionsBehind). ok
// is false for a source that reports no runs, or that has not reported
// since the configuration started it (it has no watermark yet).
func (s *SourceView) DecisionsBehind(now time.Time) (time.Duration, bool) {
	if !s.clock.runs {
		return 0, false
	}
	return s.clock.behind(now)
}

// DecisionsBehind is how far behind now the job's decisions are: as far
// as the furthest behind of the sources that report it (sources are the
// saved sources' views, SourceView.DecisionsBehind), or now less what it
// has decided while one of them has not read to its end since it
// started. A source down, or catching up, holds it back; about the
// sources' late windows is its usual value.
func (v *JobView) DecisionsBehind(sources []*SourceView, now time.Time) time.Duration {
	clock := func(name string) *sourceClock {
		for _, s := range sources {
			if s.Name == name {
				return &s.clock
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
			waited = append(waited, &s.clock)
		}
	}
	behind, some, held := time.Duration(0), false, false
	for _, c := range waited {
		b, ok := c.behind(now)
		held = held || !ok || !c.endedOnce
		if ok {
			behind, some = max(behind, b), true
		}
	}
	switch {
	case held:
		mark := v.DecidedUntil
		if mark.IsZero() {
			mark = v.FirstWatched.Time()
		}
		return max(now.Sub(mark), 0)
	case !some:
		return 0 // no source of runs: nothing to wait for
	}
	return behind
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
func (w *watermarks) decidable(j *job, now time.Time) (time.Time, bool) {
	return w.decidableBy(j, now, true)
}

// decidableBy is decidable; force says whether a job holding more than
// maxPending records has the oldest decided anyway.
func (w *watermarks) decidableBy(j *job, now time.Time, force bool) (time.Time, bool) {
	startingUp := now.Sub(w.started) < w.hold
	var mark, readMark time.Time
	some, reported, someRead := false, true, false
	w.reporting(j, now, func(src *source) {
		at, ok := src.clock.watermark(now, startingUp)
		if !ok {
			reported = false
			return
		}
		if !some || at.Before(mark) {
			mark, some = at, true
		}
		if !src.clock.seen.IsZero() && (!someRead || at.Before(readMark)) {
			readMark, someRead = at, true
		}
	})
	to, ok := mark, reported && some
	if reported && !some && !startingUp { // no source of runs: nothing can arrive late
		to, ok = now, true
	}
	// Not while a source has not even started reading, in its first
	// seconds: it may hold older records than any.
	if force && len(j.held.list) > maxPending && someRead && (reported || !w.firstReading(now)) {
		forced := j.held.list[len(j.held.list)-maxPending].Time()
		if readMark.Before(forced) {
			forced = readMark
		}
		if !ok || forced.After(to) {
			w.logger.Warn("deciding a job's oldest records before a source that has read none has: too many held", ratelog.Per("job"), "job", j.spec.Name, "held", len(j.held.list), "limit", maxPending, "until", forced)
			to, ok = forced, true
		}
	}
	return to, ok
}

// signalHeld signals Held if records are held and it was not signalled
// since DecideHeld last found none.
func (o *orderer) signalHeld() {
	if len(o.holding) == 0 || o.heldSignalled {
		return
	}
	o.heldSignalled = true
	select {
	case o.held <- struct{}{}:
	default:
	}
}

// shrinkHolding rebuilds the set of jobs holding records once it holds an
// eighth of what it held at its peak: a map keeps the table of its largest
// size, and a walk visits all of it, so after a catch-up that held 10,000
// jobs every walk over the few jobs a stream holds (here ten times a
// second, and at every batch at a source's end) cost a walk over 10,000.
func (o *orderer) shrinkHolding() {
	if o.holdingPeak < 64 || len(o.holding)*8 > o.holdingPeak {
		return
	}
	small := make(map[*job]struct{}, len(o.holding))
	for j := range o.holding {
		small[j] = struct{}{}
	}
	o.holding, o.holdingPeak = small, len(small)
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
func memoKey(j *job) (string, bool) {
	switch len(j.Sources) {
	case 0:
		return "", true
	case 1:
		return j.Sources[0], true
	}
	return "", false
}

// decidableIn is decidable(j, now), looked up in memo where it can be.
func (w *watermarks) decidableIn(memo decidableMemo, j *job, now time.Time) (time.Time, bool) {
	key, single := memoKey(j)
	if !single || len(j.held.list) > maxPending {
		return w.decidable(j, now)
	}
	if m, ok := memo[key]; ok {
		return m.to, m.ok
	}
	to, ok := w.decidable(j, now)
	memo[key] = struct {
		to time.Time
		ok bool
	}{to, ok}
	return to, ok
}

// decideJob decides what the job's watermark allows now (memo: the
// pass's, see decidableMemo).
func (o *orderer) decideJob(memo decidableMemo, j *job, now time.Time) {
	if to, ok := o.marks.decidableIn(memo, j, now); ok && o.rules.decide(j, to, now) {
		o.changed(j)
	}
}
