package model

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/observation"
)

// The orderer. Sources hand over records in any order, each as far as it
// has read; the verdicts of a job are those of its records applied in
// time order. The orderer takes each batch (applyBatch), finds each
// record's job, and holds it in the job's held records until the
// watermark of every source that reports the job has passed it
// (eventtime.go), then releases what the watermark allows to the job's
// state machine (machine.decide), in time order: at once where the batch
// allows it (decideInPlace), else from DecideHeld and the reaps
// (reapindex.go), which also close the runs on this host whose process is
// gone. What it changes it marks in the change log.

// orderer holds records and releases them at watermarks. Its state is the
// jobs', the sources' clocks, and what makes a pass cheap: the set of jobs
// holding records, the reap's index, the passes' memos.
type orderer struct {
	opts  *Options
	clock *steadyClock
	log   *changeLog
	skews *hostSkews
	rules machine // the jobs' transitions, which it hands records to

	jobs  map[string]*job
	marks watermarks // the sources, and how far each job may be decided

	// retention is how long a retired job is kept (SetRetiredRetention;
	// 0: until it comes back).
	retention time.Duration

	holding     map[*job]struct{} // jobs that may hold records (DecideHeld)
	holdingPeak int               // the most jobs holding was seen with (shrinkHolding)
	batches     uint64            // batches applied, to find a batch's jobs once each
	// scanned and scanOf are applyBatch's scratch (see scan), kept from
	// one batch to the next.
	scanned []batchJob
	scanOf  []int
	reap    reapIndex

	held          chan struct{} // see Tracker.Held
	heldSignalled bool          // held was signalled since DecideHeld last found nothing held
	caughtUp      chan struct{} // see Tracker.CaughtUp
}

func newOrderer(opts *Options, clock *steadyClock, log *changeLog, skews *hostSkews) *orderer {
	o := &orderer{opts: opts, clock: clock, log: log, skews: skews, jobs: map[string]*job{},
		marks:   watermarks{hold: opts.StartupHold, logger: opts.Logger, sources: map[string]*source{}},
		holding: map[*job]struct{}{}, held: make(chan struct{}, 1), caughtUp: make(chan struct{}, 1)}
	o.rules = machine{host: opts.Host, logger: opts.Logger, window: o.marks.window, repeated: o.countRepeat}
	return o
}

// source is a configured source: what is saved of it, its latest
// observations and its clock in event time.
type source struct {
	typ  string
	live bool // SourceSpec.Live
	SourceState
	observations []observation.Observation // its latest batch's, not saved
	clock        sourceClock
}

// configure starts the configuration of jobs and sources at now (see
// Tracker.Configure), and returns the sources it lets go: removed, or
// replaced by one that reads something else.
func (o *orderer) configure(jobs []JobSpec, sources []SourceSpec, now time.Time) (gone map[string]*source) {
	// The watermarks start again: the jobs the reaps passed over keep the
	// time those reaps decided them to.
	for _, j := range o.jobs {
		o.reap.catchUp(j)
	}
	o.reap.to, o.reap.stale = nil, true
	next := make(map[string]*job, len(jobs))
	for i := range jobs {
		s := &jobs[i]
		j := o.jobs[s.Name]
		if j == nil {
			j = newJob(now)
		}
		j.configure(s, now)
		next[s.Name] = j
	}
	for name, j := range o.jobs {
		switch {
		case next[name] != nil:
		case j.Discovered:
			j.retire(now)
			next[name] = j
		default:
			removed(&o.log.removedJobs, name)
		}
	}
	for name := range next {
		delete(o.log.removedJobs, name)
	}
	o.jobs = next
	nextSrc := make(map[string]*source, len(sources))
	for _, s := range sources {
		src := o.marks.sources[s.Name]
		if src == nil || src.Identity != s.Identity {
			src = &source{}
		}
		src.typ, src.live = s.Type, s.Live
		src.Identity = s.Identity
		// Every source starts reading again: the start-up hold waits for
		// each to read to its end (eventtime.go).
		src.clock = sourceClock{runs: s.Runs, window: s.LateWindow}
		nextSrc[s.Name] = src
	}
	gone = map[string]*source{}
	for name, src := range o.marks.sources {
		if nextSrc[name] != src {
			gone[name] = src
		}
		if nextSrc[name] == nil {
			removed(&o.log.removedSources, name)
		}
	}
	for name := range nextSrc {
		delete(o.log.removedSources, name)
	}
	o.marks.sources = nextSrc
	o.marks.unended = nil
	o.marks.started = now
	return gone
}

// setHealth is Tracker.SetHealth.
func (o *orderer) setHealth(name string, up bool, err error, now time.Time) {
	src := o.marks.sources[name]
	if src == nil {
		return
	}
	if !up && !src.clock.down {
		src.clock.watermark(now, now.Sub(o.marks.started) < o.opts.StartupHold) // held where it is now
		// Back up, it is not at its end until it says so again.
		src.clock.atEnd = false
	}
	src.clock.down = !up
	reason := ""
	if !up && err != nil {
		reason = err.Error()
	}
	if src.up != up || src.reason != reason {
		src.up, src.reason = up, reason
		o.log.markSource(name)
	}
}

// applyBatch is Apply: take is how each record that is not late is
// taken (orderer.take; the tests' reference holds every one).
func (o *orderer) applyBatch(b *Batch, take func(bj *batchJob, name string, ev *Event, now time.Time)) {
	src := o.marks.sources[b.Source]
	if src == nil {
		// A source that is no longer configured (a reload raced its last
		// batch): nothing of it is kept.
		return
	}
	now := o.clock.now()
	o.batches++
	of := o.scan(src, b.Source, b.Events, now, b.AtEnd)
	touched := o.advance(src, b)
	for i := range b.Events {
		if k := of[i]; k >= 0 {
			take(&o.scanned[k], b.Source, &b.Events[i], now)
		}
	}
	memo := decidableMemo{}
	for _, j := range touched {
		j.held.sort()
		o.decideJob(memo, j, now)
		if len(j.held.list) == 0 {
			delete(o.holding, j) // decided in place: nothing for DecideHeld
		}
	}
	o.signalHeld()
}

// batchJob is what Apply's scan found of one job's records in a batch.
type batchJob struct {
	j *job
	// onTime is the batch's index of the job's latest record that is not
	// late so far (-1: none yet).
	onTime int
	// inPlace: the job's records that are not late are in the order they
	// are applied in, go after those it holds, come after its late ones
	// (applied at once, as they are taken), and none says a run declined;
	// so those its watermark has passed may be decided as they are taken.
	// to is that watermark once known; deciding, that one of them was.
	inPlace, toKnown, deciding bool
	to                         time.Time
}

// scan counts a batch's records, moves its source's latest record time on,
// and finds each record's job (of: its index in o.scanned, -1 for a record
// rejected or of no job), each job once, and whether its records may be
// decided in place. now is the model's; atEnd: the batch is at its
// source's end.
func (o *orderer) scan(src *source, name string, events []Event, now time.Time, atEnd bool) (of []int) {
	o.scanned = o.scanned[:0]
	of = slices.Grow(o.scanOf[:0], len(events))[:len(events)]
	o.scanOf = of
	for i := range events {
		ev, k := &events[i], -1
		if j := o.recordOf(src, name, ev, now, atEnd); j != nil {
			if j.batch != o.batches {
				j.batch, j.scanIndex = o.batches, len(o.scanned)
				o.scanned = append(o.scanned, batchJob{j: j, onTime: -1, inPlace: true})
				o.holding[j] = struct{}{}
			}
			k = j.scanIndex
			o.scanned[k].scan(events, i, name)
		}
		of[i] = k
	}
	return of
}

// scan looks at the job's record events[i] for inPlace.
func (bj *batchJob) scan(events []Event, i int, source string) {
	ev, j := &events[i], bj.j
	switch {
	case !j.decided.IsZero() && ev.Time.Before(j.decided): // late
		bj.inPlace = bj.inPlace && bj.onTime < 0
		return
	case bj.onTime < 0:
		bj.inPlace = bj.inPlace && j.held.before(ev, source)
	default:
		bj.inPlace = bj.inPlace && compareEvents(&events[bj.onTime], ev) <= 0
	}
	// A start held looks ahead through the records held with it for one
	// saying that it declined to run (heldRecords.declined): a job with such a
	// record in the batch holds them all.
	bj.inPlace = bj.inPlace && !declines(ev)
	bj.onTime = i
}

// recordOf counts a record a source handed over and returns its job, the
// source then among those reporting it (nil: none, or the record dated
// beyond the clock's allowance). A record of this host is moved onto the
// model's time (hostTime); another host's tells its clock's offset.
func (o *orderer) recordOf(src *source, name string, ev *Event, now time.Time, atEnd bool) *job {
	switch {
	case ev.Host == "":
	case ev.Host == o.opts.Host:
		ev.Time = o.clock.hostTime(ev.Time) // the batch's copy, as ev.late is
	default:
		o.skews.observe(ev.Host, ev.Time, now, src.clock.window, atEnd)
	}
	if ev.Time.After(now.Add(o.opts.MaxClockSkew)) {
		src.ParseErrors++
		o.opts.Logger.Debug("record dated in the future", "source", name, "job", ev.Job, "time", ev.Time)
		return nil
	}
	src.Records++
	if ev.Time.After(src.clock.seen) {
		src.clock.seen = ev.Time
	}
	j := o.jobs[ev.Job]
	if j == nil {
		src.UnknownJob++
		return nil
	}
	if j.batch != o.batches {
		o.reap.catchUp(j) // before its sources change: the reaps' time is that of those it had
	}
	if !slices.Contains(j.Sources, name) {
		j.own()
		j.Sources = append(j.Sources, name)
	}
	return j
}

// caughtUpRecords is how many records a source reads between two ends of
// what it has to read for its end to be a catch-up's (CaughtUp): more than
// a stream hands over between two ends, so that CaughtUp comes once per
// catch-up.
const caughtUpRecords = 10000

// advance stores what the batch says of its source: its clock (so that
// the watermarks its records are decided against are those after the
// batch), counts and position. It returns the jobs the batch touched, and
// when it says the source is at its end every job holding records.
func (o *orderer) advance(src *source, b *Batch) []*job {
	touched := make([]*job, 0, len(o.scanned))
	for i := range o.scanned {
		touched = append(touched, o.scanned[i].j)
	}
	if !src.clock.reported || src.clock.atEnd != b.AtEnd {
		o.log.markSource(b.Source) // its watermark follows the clock, or stops following it
	}
	if b.AtEnd {
		// At its end its watermark moves up to the clock: the records held
		// are decided with this batch, not a decision tick later (a
		// catch-up's last save then shows them).
		for j := range o.holding {
			if j.batch != o.batches && o.jobs[j.spec.Name] == j {
				j.batch = o.batches
				touched = append(touched, j)
			}
		}
	}
	if b.AtEnd && !src.clock.endedOnce {
		o.marks.unended = nil
	}
	src.clock.sinceEnd += len(b.Events)
	if b.AtEnd {
		if src.clock.sinceEnd >= caughtUpRecords {
			select {
			case o.caughtUp <- struct{}{}:
			default:
			}
		}
		src.clock.sinceEnd = 0
	}
	src.clock.reported = true
	src.clock.atEnd = b.AtEnd
	src.clock.vouched = time.Time{}
	if b.AtEnd {
		src.clock.vouched = b.Watermark
	}
	src.clock.endedOnce = src.clock.endedOnce || b.AtEnd
	src.ParseErrors += uint64(b.ParseErrors)
	src.PositionResets += uint64(b.PositionResets)
	if b.Position != nil {
		src.Position = append(json.RawMessage(nil), b.Position...)
	}
	observed := false
	if b.Observations != nil && !observation.Equal(b.Observations, src.observations) {
		src.observations, observed = slices.Clone(b.Observations), true
	}
	if len(b.Events) > 0 || b.ParseErrors > 0 || b.PositionResets > 0 || b.Position != nil || observed {
		o.log.markSource(b.Source) // an empty poll leaves nothing new to save
	}
	return touched
}

// take applies a record at once when it is late, decides it in place when
// its job's watermark has passed it already, or holds it for the
// watermark.
func (o *orderer) take(bj *batchJob, name string, ev *Event, now time.Time) {
	switch {
	case o.admit(bj.j, name, ev, now):
	case o.decidedAlready(bj, ev, now):
		o.decideInPlace(bj, ev, name, now)
	default:
		bj.j.held.add(ev, name)
	}
	o.changed(bj.j)
}

// admit readies j for its record ev of source name, and applies the
// record at once when it is late, dated before what j has decided
// already; late reports whether it was.
func (o *orderer) admit(j *job, name string, ev *Event, now time.Time) (late bool) {
	j.own()
	// History read on first start counts: a job whose only runs failed
	// has gone without success since its earliest record, not since
	// jobwatch first watched it.
	if j.FirstWatched.After(ev.Time) {
		j.FirstWatched = StampOf(ev.Time)
	}
	if j.decided.IsZero() || !ev.Time.Before(j.decided) {
		return false
	}
	src := o.marks.sources[name]
	src.LateRecords++
	if o.opts.Logger.Enabled(context.Background(), slog.LevelDebug) { // its arguments cost, logged or not
		o.opts.Logger.Debug("late record: its job has decided past its time", "source", name, "job", ev.Job, "time", ev.Time, "decided_until", j.decided)
	}
	ev.late = true // the batch's copy: a source hands a batch over once
	ok := o.rules.apply(j, ev, name, now)
	ev.late = false
	if !ok {
		src.ParseErrors++
	}
	return true
}

// decidedAlready reports whether a record Apply takes may be decided in
// place: its job's records in the batch allow it (batchJob.inPlace) and
// the job's watermark after the batch, without the forcing of a job that
// holds too many, has passed it. Deciding it then is what holding it
// would do at the batch's end: the records before it are applied (the
// batch's are, being in order; those held before, which go before it, are
// applied now), and the decision up to the watermark follows at the end.
func (o *orderer) decidedAlready(bj *batchJob, ev *Event, now time.Time) bool {
	if !bj.inPlace {
		return false
	}
	if !bj.toKnown {
		to, ok := o.marks.decidableBy(bj.j, now, false)
		bj.toKnown, bj.inPlace, bj.to = true, ok && !to.Before(bj.j.decided), to
	}
	return bj.inPlace && !ev.Time.After(bj.to)
}

// decideInPlace applies a record decidedAlready allows, after the records
// the job holds (applied with the batch's first such record).
func (o *orderer) decideInPlace(bj *batchJob, ev *Event, source string, now time.Time) {
	if !bj.deciding {
		bj.deciding = true
		o.rules.applyPending(bj.j, len(bj.j.held.list), now)
		startSlots(bj.j, bj.j.calendar())
	}
	o.rules.decideRecord(bj.j, ev, source, now)
}

// decideHeld is DecideHeld.
func (o *orderer) decideHeld(now time.Time) (holding bool) {
	memo := decidableMemo{}
	o.holdingPeak = max(o.holdingPeak, len(o.holding))
	for j := range o.holding {
		if o.jobs[j.spec.Name] != j {
			delete(o.holding, j) // removed by a reload
			continue
		}
		o.decideJob(memo, j, now)
		if len(j.held.list) == 0 {
			delete(o.holding, j)
		}
	}
	o.shrinkHolding()
	if len(o.holding) == 0 {
		o.heldSignalled = false
		return false
	}
	return true
}

// reapPass is Reap: it walks the reap's index (reapindex.go), passing
// over the jobs that are quiet until after what their watermark allows.
func (o *orderer) reapPass(now time.Time) {
	memo := decidableMemo{}
	r := &o.reap
	if r.stale || r.forgotten > len(r.list)/2 {
		r.build(o.jobs)
	}
	keyTo := make([]reapKeyTo, len(r.keys))
	for i := range r.list {
		e := &r.list[i]
		if e.j == nil || o.passOver(e, keyTo, memo, now) {
			continue
		}
		if o.forgetRetired(e.j.spec.Name, e.j, now) {
			e.j = nil
			r.forgotten++
			continue
		}
		o.reapJob(memo, e.j, now)
		r.visited(e)
		if int(e.key) >= len(keyTo) {
			keyTo = append(keyTo, make([]reapKeyTo, int(e.key)+1-len(keyTo))...)
		}
	}
	r.keep(memo)
}

// reapJob decides what j's watermark allows now, and closes its runs on
// this host whose process is gone.
func (o *orderer) reapJob(memo decidableMemo, j *job, now time.Time) {
	name := j.spec.Name
	o.decideJob(memo, j, now)
	for _, r := range slices.Clone(j.runs.open) { // oldest first, so logs come in one order
		if r.Host != o.opts.Host || r.PID <= 0 {
			continue
		}
		if o.opts.Alive(r.PID) {
			r.goneSince, r.seenAlive = Stamp{}, true
			continue
		}
		if r.goneSince.IsZero() {
			r.goneSince = StampOf(now)
		}
		// Its end record, written before the process went, is dated
		// before it was seen gone: lost only once the job has decided
		// past that, and the end has not come.
		if now.Sub(r.goneSince.Time()) < o.opts.LostAfter || !j.decided.After(r.goneSince.Time()) || j.held.endOf(r) {
			continue
		}
		if r.EndUnlogged {
			o.rules.endUnlogged(j, r)
		} else {
			o.opts.Logger.Info("closing run as lost", "job", name, "host", r.Host, "pid", r.PID, "started", r.Start, "reason", "process is gone")
			o.rules.lose(j, r, now)
		}
		o.changed(j)
	}
}

// forgetRetired drops the job if it was retired longer than the
// retention ago, and reports whether it did. Reap asks for each job as it
// passes it (a second walk over 10,000 jobs every reap cost as much as the
// decisions).
func (o *orderer) forgetRetired(name string, j *job, now time.Time) bool {
	if o.retention == 0 || j.Retired.IsZero() || now.Sub(j.Retired.Time()) <= o.retention {
		return false
	}
	o.opts.Logger.Info("forgetting a retired job", "job", name, "retired", j.Retired)
	delete(o.jobs, name)
	delete(o.holding, j)
	removed(&o.log.removedJobs, name)
	o.log.signal()
	return true
}

// countRepeat counts a record that repeats one applied already (see
// machine.apply) as its source's unreadable record.
func (o *orderer) countRepeat(source string) {
	if src := o.marks.sources[source]; src != nil {
		src.ParseErrors++
		o.log.markSource(source)
	}
}

// changed marks j changed for the saver, and for the reap to visit.
func (o *orderer) changed(j *job) {
	o.reap.wake(j)
	o.log.markJob(j)
}
