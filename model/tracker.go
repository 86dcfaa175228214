package model

import (
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jobwatch/jobwatch/internal/ratelog"
	"github.com/jobwatch/jobwatch/observation"
	"github.com/jobwatch/jobwatch/schedule"
)

// JobSpec is what the configuration says about one job.
type JobSpec struct {
	Name     string
	Schedule schedule.Schedule
	Grace    time.Duration
	Timeout  time.Duration // 0: runs are never closed for age
	// MinDuration: a run that succeeds in less did nothing (TooShort).
	// Persistent: a systemd timer with Persistent=, which runs an elapse
	// missed while the host was off (or the timer stopped) at once, late:
	// that run is the last missed elapse's (missedCutoff, attribute).
	Persistent    bool
	MinDuration   time.Duration
	Scope         string // "host" or "cluster"
	StaleMultiple int
	// AbandonAfter: a run jobwatch cannot check, of a job without
	// timeout, is closed as lost this long after its start when nothing
	// else says it is over (0: DefaultAbandonAfter; abandoned.go).
	AbandonAfter time.Duration
	// Discovered: host mode (discovery.watch) found the job on the host,
	// and no job of the config names it. One that disappears is retired,
	// not dropped (see Configure).
	Discovered bool
	// Maintenance are the job's maintenance windows (pause.go).
	Maintenance []Window
}

// SourceSpec names a configured source.
type SourceSpec struct {
	Name, Type string
	// Identity names what the source reads (type and file, table or
	// journal). A source whose identity changes starts over; one removed
	// and configured again, or renamed, takes over its old position.
	Identity string
	// Runs: the source reports runs (a lock probe does not), so the
	// decisions of the jobs it may report wait for its watermark.
	Runs bool
	// LateWindow is how late, in event time, the source may hand over a
	// record: its watermark is that far behind what it has read.
	LateWindow time.Duration
	// Live: the source receives (check-ins) rather than reads: what came
	// while jobwatch was not running is not known (pause.go).
	Live bool
}

// Options configure a Tracker.
type Options struct {
	// Host is this machine's host name: runs reported from it are checked
	// for a live process.
	Host string
	// Now is the wall clock, Mono a monotonic one; the model's now never
	// goes back (see steadyClock). Both nil: time.Now and the process's
	// monotonic clock. A Now of the caller's own without a Mono (a test's
	// fake clock) is taken as steady: Mono follows it, and no step is
	// seen (the real monotonic clock beside a fake wall clock saw every
	// fake advance as a step, and a slow reading as a step back).
	Now  func() time.Time
	Mono func() time.Duration
	// Alive reports whether a process exists; default: kill(pid, 0).
	Alive  func(pid int) bool
	Logger *slog.Logger
	// MaxClockSkew: records dated further in the future are rejected.
	MaxClockSkew time.Duration
	// LostAfter is how long a run's process must have been gone before the
	// run is closed as lost: the end record of a process that just exited
	// may still be on its way.
	LostAfter time.Duration
	// StartupHold: after Configure nothing is decided for this long, and
	// until every source has read to its end once (default
	// DefaultStartupHold; NoStartupHold for none, in tests that apply a
	// record and look at once).
	StartupHold time.Duration
}

// Defaults of Options.
const (
	DefaultMaxClockSkew = 5 * time.Minute
	DefaultLostAfter    = 5 * time.Second
	// DefaultStartupHold: a source slow to start, or to say it has caught
	// up, holds no run back.
	DefaultStartupHold = 10 * time.Second
	NoStartupHold      = -1
	// maxRetired bounds how many removed sources' positions are kept.
	maxRetired = 64
	// lostMemory bounds how many closed-as-lost runs are remembered per job,
	// so a late end record for one of them is not counted a second time.
	lostMemory = 64
)

// Tracker is the job model: it applies events from every source and keeps,
// per job, what the collector renders. It is safe for concurrent use.
type Tracker struct {
	opts  Options
	clock steadyClock

	mu      sync.RWMutex
	started time.Time // of the current configuration
	jobs    map[string]*job
	sources map[string]*source
	retired map[string]SourceState // of sources no longer configured
	// retention is how long a retired job is kept (SetRetiredRetention;
	// 0: until it comes back).
	retention   time.Duration
	holding     map[*job]struct{} // jobs that may hold records (DecideHeld)
	holdingPeak int               // the most jobs holding was seen with (shrinkHolding)
	batches     uint64            // batches applied, to find a batch's jobs once each
	// scanned and scanOf are Apply's scratch (see scan), kept from one
	// batch to the next.
	scanned []batchJob
	scanOf  []int
	holdAll bool // tests: decide nothing in place, to compare with holding
	// The reap's list of jobs and what it decided each source's jobs to
	// (reapindex.go).
	reapList      []reapEntry
	reapStale     bool // jobs came or went: rebuild it
	reapForgotten int  // entries of jobs forgotten since it was built
	reapKeys      []string
	reapKeyIndex  map[string]int32
	reapTo        map[string]time.Time
	reapAll       bool   // tests: visit every job, to compare with passing over
	passedOver    uint64 // jobs the reaps passed over, for tests
	// unended are the sources of runs that have not read to their end
	// since Configure; nil: to be found again (see reporting).
	unended []*source

	// What changed since the last Changes, for the saver (see changes.go).
	dirty          []*job
	dirtySources   map[string]bool
	removedJobs    map[string]bool
	removedSources map[string]bool
	full           bool // everything changed
	retiredChanged bool
	notify         chan struct{}
	signalled      bool // notify was signalled since the last Changes
	// decided and decidedSignalled are notify's and signalled's for
	// verdicts alone, made while verdictsOnly (see signal).
	decided          chan struct{}
	decidedSignalled bool
	verdictsOnly     bool
	held             chan struct{} // see Held
	heldSignalled    bool          // held was signalled since DecideHeld last found nothing held
	caughtUp         chan struct{} // see CaughtUp
	// skews are other hosts' clock offsets, as their records show them
	// (hostskew.go).
	skews map[string]*hostSkew
}

type job struct {
	spec JobSpec
	// The job's state, shared with its latest view while shared is set:
	// every change of it starts with own.
	*JobState
	shared atomic.Bool // atomic: views are also taken under the tracker's read lock
	// open are the runs in progress, oldest first (Run.Before), at most
	// MaxOpenRuns. A slice, not a map: most jobs have none or one, and a
	// map of one run held 400 bytes.
	open  []*Run
	dirty bool           // in Tracker.dirty
	ended ring[endedRun] // the latest runs that ended, for repeated ends
	// pending are the records held for the job's watermark, in the order
	// they are applied (compareEvents); see eventtime.go.
	pending []Held
	batch   uint64 // Tracker.batches when a batch last touched it
	// scanIndex is its index in Tracker.scanned for that batch.
	scanIndex int
	unsorted  bool // pending is out of order from sortedLen (see hold)
	// declining counts the pending records that may say a run declined
	// to run (declines), so that a start looks through pending only when
	// one is held.
	declining int
	sortedLen int
	decided   time.Time // JobView.DecidedUntil; see decidedOf
	reapSlot  int       // its index in Tracker.reapList
	// abandonQuiet: no run of the job is abandoned (abandon) at a time up
	// to it, Unix nanoseconds (0: not known); a new run or spec clears it.
	abandonQuiet int64
	// recent and durations hold the job's History, which only views of
	// the job carry (see ring).
	recent    ring[RecentRun]
	durations ring[float64]
}

// own gives the job a state of its own before it changes: a view shares
// the state rather than copying it (most jobs do not change between two
// saves, and every saved view held a copy of its job's state).
func (j *job) own() {
	if j.shared.Load() {
		j.JobState = j.JobState.clone()
		j.shared.Store(false)
	}
}

// endedRun is a run that ended, by its key's hash (16 bytes rather than
// 64: a fleet's job keeps lostMemory of them; two keys of one job sharing
// a 64-bit hash within a minute is not a concern), and when (Unix
// nanoseconds).
type endedRun struct {
	key uint64
	at  int64
}

// endedSeed hashes run keys for endedRun; the hashes are not saved.
var endedSeed = maphash.MakeSeed()

type source struct {
	typ  string
	live bool
	SourceState
	observations []observation.Observation // its latest batch's, not saved
	clock        sourceClock
}

// New returns a Tracker watching no jobs yet; call Configure.
func New(o Options) *Tracker {
	switch {
	case o.Mono != nil:
	case o.Now == nil:
		o.Mono = ProcessMono
	default:
		o.Mono = steadyMono(o.Now)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Alive == nil {
		o.Alive = processAlive
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxClockSkew == 0 {
		o.MaxClockSkew = DefaultMaxClockSkew
	}
	if o.LostAfter == 0 {
		o.LostAfter = DefaultLostAfter
	}
	if o.StartupHold == 0 {
		o.StartupHold = DefaultStartupHold
	}
	return &Tracker{opts: o, clock: steadyClock{wall: o.Now, mono: o.Mono, logger: o.Logger}, jobs: map[string]*job{}, sources: map[string]*source{}, retired: map[string]SourceState{}, holding: map[*job]struct{}{}, notify: make(chan struct{}, 1), decided: make(chan struct{}, 1), held: make(chan struct{}, 1), caughtUp: make(chan struct{}, 1)}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Configure sets the watched jobs and sources. Jobs and sources that stay
// keep their state; new jobs start being watched now; removed ones are
// dropped, but for discovered jobs (JobSpec.Discovered), which are retired:
// no longer expected, their history kept until the retention
// (SetRetiredRetention) has passed, and taken up again if they come back.
func (t *Tracker) Configure(jobs []JobSpec, sources []SourceSpec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.now()
	// The watermarks start again: the jobs the reaps passed over keep the
	// time those reaps decided them to.
	for _, j := range t.jobs {
		t.catchUp(j)
	}
	t.reapTo, t.reapStale = nil, true
	next := make(map[string]*job, len(jobs))
	for _, s := range jobs {
		j := t.jobs[s.Name]
		if j == nil {
			j = newJob(now)
		}
		j.configure(s, now)
		next[s.Name] = j
	}
	for name, j := range t.jobs {
		switch {
		case next[name] != nil:
		case j.Discovered:
			j.retire(now)
			next[name] = j
		default:
			t.removed(&t.removedJobs, name)
		}
	}
	for name := range next {
		delete(t.removedJobs, name)
	}
	t.jobs = next
	nextSrc := make(map[string]*source, len(sources))
	for _, s := range sources {
		src := t.sources[s.Name]
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
	for name, src := range t.sources {
		if nextSrc[name] != src {
			t.retire(name, src.SourceState)
		}
		if nextSrc[name] == nil {
			t.removed(&t.removedSources, name)
		}
	}
	for name := range nextSrc {
		delete(t.removedSources, name)
	}
	t.sources = nextSrc
	t.unended = nil
	t.adoptRetired()
	t.started = now
	t.changedAll() // specs changed: every job's view does
}

func (t *Tracker) removed(set *map[string]bool, name string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[name] = true
}

// retire keeps the state of a source that is no longer configured, so that
// the same source configured again (under its old name or a new one) goes
// on from its position instead of reading everything again.
func (t *Tracker) retire(name string, s SourceState) {
	if s.Identity == "" || s.Position == nil {
		return
	}
	s.Retired = t.clock.now()
	t.retired[name] = s
	t.retiredChanged = true
	for len(t.retired) > maxRetired {
		oldest := ""
		for n, r := range t.retired {
			if oldest == "" || r.Retired.Before(t.retired[oldest].Retired) {
				oldest = n
			}
		}
		delete(t.retired, oldest)
	}
}

// adoptRetired gives configured sources that have read nothing yet the state
// of a retired source that read the same thing: the same type and place.
func (t *Tracker) adoptRetired() {
	for name, src := range t.sources {
		if src.Position != nil || src.Identity == "" {
			continue
		}
		from := "" // the retired source of the same name, else the latest retired
		for n, r := range t.retired {
			if r.Identity != src.Identity {
				continue
			}
			if n == name {
				from = n
				break
			}
			if from == "" || r.Retired.After(t.retired[from].Retired) {
				from = n
			}
		}
		if from != "" {
			up, reason := src.up, src.reason
			src.SourceState = t.retired[from]
			src.Retired = time.Time{}
			src.up, src.reason = up, reason
			delete(t.retired, from)
			t.retiredChanged = true
			t.markSource(name)
			t.opts.Logger.Info("source takes over a position read before", "source", name, "from", from)
		}
	}
}

func newJob(now time.Time) *job {
	return &job{JobState: &JobState{FirstWatched: now}}
}

// configure gives j the spec s, taking a retired job up again: it is
// expected from now on, as if first watched now, with its history kept.
func (j *job) configure(s JobSpec, now time.Time) {
	j.spec, j.abandonQuiet = s, 0
	if j.Discovered != s.Discovered {
		j.own()
		j.Discovered = s.Discovered
	}
	if j.Retired.IsZero() {
		return
	}
	j.own()
	j.Retired, j.Resumed = time.Time{}, now
	// No run was due while it was gone: slots and staleness count from
	// now, not from before it was retired.
	j.ConsecutiveMissed = 0
	if j.SlotsCheckedUntil.Before(now) {
		j.SlotsCheckedUntil = now
	}
}

// retire makes j a retired job, if it is not one yet: its spec has no
// schedule, timeout or threshold left, so nothing is expected of it, and
// its state stays as it is. A retired job's spec is the same before and
// after a restart (retiredSpec), when nothing else of it is known.
func (j *job) retire(now time.Time) {
	j.spec, j.abandonQuiet = retiredSpec(j.spec.Name), 0
	if !j.Retired.IsZero() {
		return
	}
	j.own()
	j.Retired = now
}

func retiredSpec(name string) JobSpec {
	return JobSpec{Name: name, Scope: "host", Discovered: true}
}

// SetRetiredRetention sets how long a retired job is kept after it was
// retired (discovery.retired_retention; 0, as a Tracker starts: until it
// comes back); Reap forgets it then.
func (t *Tracker) SetRetiredRetention(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retention = max(d, 0)
}

// forgetRetired drops the job if it was retired longer than the
// retention ago, and reports whether it did. Reap asks for each job as it
// passes it (a second walk over 10,000 jobs every reap cost as much as the
// decisions).
func (t *Tracker) forgetRetired(name string, j *job, now time.Time) bool {
	if t.retention == 0 || j.Retired.IsZero() || now.Sub(j.Retired) <= t.retention {
		return false
	}
	t.opts.Logger.Info("forgetting a retired job", "job", name, "retired", j.Retired)
	delete(t.jobs, name)
	delete(t.holding, j)
	t.removed(&t.removedJobs, name)
	t.signal()
	return true
}

// Apply takes a batch read by a source and stores its position. Its records
// are held until the watermark of every source that reports their job has
// passed them, then applied in time order (eventtime.go); a record dated
// before what its job has decided already is late, and applied at once
// where it can be. A job's records that its watermark after the batch has
// passed already are decided as they are taken, when that gives the order
// holding them would (decideInPlace): a catch-up holds almost nothing.
func (t *Tracker) Apply(b Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	src := t.sources[b.Source]
	if src == nil {
		// A source that is no longer configured (a reload raced its last
		// batch): nothing of it is kept.
		return
	}
	now := t.clock.now()
	t.batches++
	of := t.scan(src, b.Source, b.Events, now, b.AtEnd)
	touched := t.advance(src, &b)
	for i := range b.Events {
		if k := of[i]; k >= 0 {
			t.take(&t.scanned[k], b.Source, &b.Events[i], now)
		}
	}
	memo := decidableMemo{}
	for _, j := range touched {
		j.sorted()
		t.decideJob(memo, j, now)
		if len(j.pending) == 0 {
			delete(t.holding, j) // decided in place: nothing for DecideHeld
		}
	}
	t.signalHeld()
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
// and finds each record's job (of: its index in t.scanned, -1 for a record
// rejected or of no job), each job once, and whether its records may be
// decided in place. now is the model's; atEnd: the batch is at its
// source's end.
func (t *Tracker) scan(src *source, name string, events []Event, now time.Time, atEnd bool) (of []int) {
	t.scanned = t.scanned[:0]
	of = slices.Grow(t.scanOf[:0], len(events))[:len(events)]
	t.scanOf = of
	for i := range events {
		ev, k := &events[i], -1
		if j := t.recordOf(src, name, ev, now, atEnd); j != nil {
			if j.batch != t.batches {
				j.batch, j.scanIndex = t.batches, len(t.scanned)
				t.scanned = append(t.scanned, batchJob{j: j, onTime: -1, inPlace: true})
				t.holding[j] = struct{}{}
			}
			k = j.scanIndex
			t.scanned[k].scan(events, i, name)
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
		bj.inPlace = bj.inPlace && j.heldBefore(ev, source)
	default:
		bj.inPlace = bj.inPlace && compareEvents(&events[bj.onTime], ev) <= 0
	}
	// A start held looks ahead through the records held with it for one
	// saying that it declined to run (declinedHeld): a job with such a
	// record in the batch holds them all.
	bj.inPlace = bj.inPlace && !declines(ev)
	bj.onTime = i
}

// recordOf counts a record a source handed over and returns its job, the
// source then among those reporting it (nil: none, or the record dated
// beyond the clock's allowance). A record of this host is moved onto the
// model's time (hostTime); another host's tells its clock's offset.
func (t *Tracker) recordOf(src *source, name string, ev *Event, now time.Time, atEnd bool) *job {
	switch {
	case ev.Host == "":
	case ev.Host == t.opts.Host:
		ev.Time = t.clock.hostTime(ev.Time) // the batch's copy, as ev.late is
	default:
		t.observeSkew(ev.Host, ev.Time, now, src.clock.window, atEnd)
	}
	if ev.Time.After(now.Add(t.opts.MaxClockSkew)) {
		src.ParseErrors++
		t.opts.Logger.Debug("record dated in the future", "source", name, "job", ev.Job, "time", ev.Time)
		return nil
	}
	src.Records++
	if ev.Time.After(src.clock.seen) {
		src.clock.seen = ev.Time
	}
	j := t.jobs[ev.Job]
	if j == nil {
		src.UnknownJob++
		return nil
	}
	if j.batch != t.batches {
		t.catchUp(j) // before its sources change: the reaps' time is that of those it had
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

// CaughtUp is signalled (at most one pending signal) when a source reaches
// the end of what it has to read after a catch-up: the records read are
// decided then, and the saver commits them at once rather than within its
// budget for streams.
func (t *Tracker) CaughtUp() <-chan struct{} { return t.caughtUp }

// advance stores what the batch says of its source: its clock (so that
// the watermarks its records are decided against are those after the
// batch), counts and position. It returns the jobs the batch touched, and
// when it says the source is at its end every job holding records.
func (t *Tracker) advance(src *source, b *Batch) []*job {
	touched := make([]*job, 0, len(t.scanned))
	for i := range t.scanned {
		touched = append(touched, t.scanned[i].j)
	}
	if !src.clock.reported || src.clock.atEnd != b.AtEnd {
		t.markSource(b.Source) // its watermark follows the clock, or stops following it
	}
	if b.AtEnd {
		// At its end its watermark moves up to the clock: the records held
		// are decided with this batch, not a decision tick later (a
		// catch-up's last save then shows them).
		for j := range t.holding {
			if j.batch != t.batches && t.jobs[j.spec.Name] == j {
				j.batch = t.batches
				touched = append(touched, j)
			}
		}
	}
	if b.AtEnd && !src.clock.endedOnce {
		t.unended = nil
	}
	src.clock.sinceEnd += len(b.Events)
	if b.AtEnd {
		if src.clock.sinceEnd >= caughtUpRecords {
			select {
			case t.caughtUp <- struct{}{}:
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
		t.markSource(b.Source) // an empty poll leaves nothing new to save
	}
	return touched
}

// take applies a record at once when it is late, decides it in place when
// its job's watermark has passed it already, or holds it for the
// watermark.
func (t *Tracker) take(bj *batchJob, name string, ev *Event, now time.Time) {
	j := bj.j
	j.own()
	// History read on first start counts: a job whose only runs failed
	// has gone without success since its earliest record, not since
	// jobwatch first watched it.
	if ev.Time.Before(j.FirstWatched) {
		j.FirstWatched = ev.Time
	}
	switch {
	case !j.decided.IsZero() && ev.Time.Before(j.decided):
		src := t.sources[name]
		src.LateRecords++
		if t.opts.Logger.Enabled(context.Background(), slog.LevelDebug) { // its arguments cost, logged or not
			t.opts.Logger.Debug("late record: its job has decided past its time", "source", name, "job", ev.Job, "time", ev.Time, "decided_until", j.decided)
		}
		ev.late = true // the batch's copy: a source hands a batch over once
		ok := t.apply(j, ev, name)
		ev.late = false
		if !ok {
			src.ParseErrors++
		}
	case t.decidedAlready(bj, ev, now):
		t.decideInPlace(bj, ev, name)
	default:
		j.hold(ev, name)
	}
	t.markJob(j)
}

// apply applies one event to its job; false: the record repeats one already
// applied (a second end of a run that just ended), counted as a source's
// unreadable record rather than as a run.
func (t *Tracker) apply(j *job, ev *Event, src string) bool {
	switch ev.Kind {
	case Start:
		t.applyStart(j, ev, src)
	case End:
		return t.applyEnd(j, ev)
	case Skip:
		j.applySkip(ev)
	case LockLost:
		// The run goes on (--on-lock-lost=warn) or is killed; its end
		// record follows and finishes it.
		if i := slices.Index(LockLayers, ev.Lock); i >= 0 { // the parsers take no other
			j.LockLostCounts[i]++
		}
	}
	return true
}

// applyStart opens a run, judged against the runs in progress and
// attributed to its slot.
func (t *Tracker) applyStart(j *job, ev *Event, src string) {
	if j.openAt(runKey(ev.RunID, ev.Host, ev.PID)) >= 0 {
		return // the same start read twice: one run
	}
	r := &Run{RunID: ev.RunID, Host: ev.Host, PID: ev.PID, Start: ev.Time, Source: src}
	if j.declinedHeld(r) {
		// The command declined to run (its end says skipped, held with
		// the records still pending): a skip, as that end counts it, and
		// not a run in progress, an overlap or a start.
		return
	}
	if !ev.late && ev.Lock == "file" {
		t.hostLockTaken(j, r)
	}
	// A late record is not judged against the runs around it: those
	// before it have been decided.
	r.Overlapped = !ev.late && j.overlaps(ev.Host)
	if r.Overlapped {
		j.Overlaps++
	}
	if ev.late {
		r.readLate = t.clock.now().UnixNano() // a late record is applied as it is read
	}
	r.Lease = ev.LockTTL
	r.EndUnlogged = ev.EndUnlogged
	if oldest, full := j.addOpen(r); full {
		t.closeOldest(j, ev.Job, oldest)
	}
	if !ev.late {
		j.attribute(r)
		t.supersede(j, r)
	}
	j.ConsecutiveSkips = 0
	if ev.LockTTL > 0 && !ev.Time.Before(j.LastStart) {
		j.LockTTL = ev.LockTTL // the latest start's: the lease configured now
	}
	if ev.Time.After(j.LastStart) {
		j.LastStart = ev.Time
	}
}

// applyEnd finishes the run an end record closes (or, when none is open,
// the run it states); false: it repeats an end just applied.
func (t *Tracker) applyEnd(j *job, ev *Event) bool {
	ok, lost := j.takeEnd(ev)
	if lost {
		t.opts.Logger.Info("end of a run closed as lost: its result counted", "job", ev.Job, "host", ev.Host, "pid", ev.PID, "result", ev.Result)
	}
	if !ok {
		t.opts.Logger.Debug("second end of a run that just ended; not counted", "job", ev.Job, "host", ev.Host, "pid", ev.PID, "run_id", ev.RunID)
	}
	return ok
}

// takeEnd applies an end record to j: applyEnd's rule, and the facts'
// of a held one (job.fact). ok is false when it repeats an end just
// applied; lost, when its run was closed as lost already (lostEnd).
func (j *job) takeEnd(ev *Event) (ok, lost bool) {
	r := j.findRun(ev)
	key := runKey(ev.RunID, ev.Host, ev.PID)
	if r == nil && j.wasLost(key) {
		j.lostEnd(key)
		lost = true
	}
	if r == nil && j.endedJustNow(key, ev.Time) {
		return false, lost
	}
	j.rememberEnd(key, ev.Time)
	if ev.Result == Skipped {
		j.applyDeclined(r, ev)
		return true, lost
	}
	j.endRun(r, ev)
	return true, lost
}

// endRun finishes r (nil: no run of the end is open) with the end ev: its
// result (too short, timed out), exit code and duration, from ev or from
// r's start.
func (j *job) endRun(r *Run, ev *Event) {
	dur, hasDur := ev.Duration, ev.HasDuration
	start := ev.Time.Add(-dur)
	rr := RecentRunFields{End: ev.Time, Result: ev.Result, Host: ev.Host, PID: ev.PID, ExitCode: ev.ExitCode, HasExitCode: ev.HasExitCode, Output: ev.Output, OutputRef: ev.OutputRef, Reason: ev.Reason}
	if hasDur {
		rr.Start = start
	}
	if r != nil {
		j.closeOpen(r.Key())
		start = r.Start
		rr.Start, rr.Host, rr.PID, rr.Overlapped = r.Start, r.Host, r.PID, r.Overlapped
		if !hasDur && !ev.Time.Before(r.Start) {
			dur, hasDur = ev.Time.Sub(r.Start), true
		}
	}
	rr.Duration, rr.HasDuration = dur, hasDur
	if rr.Result == Success && hasDur && dur < j.spec.MinDuration {
		rr.Result = TooShort
	}
	if rr.Result == Failure && j.timedOut(ev, dur, hasDur) {
		rr.Result = Timeout
	}
	j.finish(rr.Result, start, ev.Time, dur, hasDur, ev.ExitCode, ev.HasExitCode)
	j.remember(rr)
}

// applySkip counts a skip, attributed to its slot.
func (j *job) applySkip(ev *Event) {
	// A run recorded as started and then marked skipped (a job_runs row
	// whose status became "skipped", a check-in skip with the start's rid)
	// did not run: it leaves the runs in progress without counting as a
	// finished run.
	if ev.RunID != "" {
		j.closeOpen(runKey(ev.RunID, "", 0))
	}
	j.countSkip(ev, time.Time{})
}

// applyDeclined applies an end with status skipped: the command started
// (jobwatch run wrote its start) and declined to run (--skipped-exit,
// --skipped-output). r is its run when it is open (its start was applied
// before this end was read): it leaves the runs in progress. Either way
// it counts as a skip, never as a finished run, and last success stays.
func (j *job) applyDeclined(r *Run, ev *Event) {
	var began time.Time
	if r != nil {
		j.closeOpen(r.Key())
		began = r.Start
	}
	j.countSkip(ev, began)
}

// countSkip counts a skip at ev's time, attributed to its slot; began is
// when its run started, when known.
func (j *job) countSkip(ev *Event, began time.Time) {
	j.Skips++
	if !ev.late {
		j.attributeSkip(ev.Time)
	}
	label := ev.SkipLabel
	if label == "" {
		label = SkipOther
	}
	j.AddSkips(label, 1)
	j.ConsecutiveSkips++
	j.remember(RecentRunFields{Start: began, End: ev.Time, Result: Skipped, Host: ev.Host, PID: ev.PID, Reason: ev.Reason, Lock: ev.Lock, Holder: ev.Holder})
}

// declinedHeld reports whether a record held for the job's watermark, at
// or after r's start, says that r declined to run: an end of r with status
// skipped, or a skip naming r's run id.
func (j *job) declinedHeld(r *Run) bool {
	if j.declining == 0 {
		return false // the common case: no such record held, nothing to look through
	}
	return slices.ContainsFunc(j.pending, func(h Held) bool {
		if !declines(&h.Event) || h.Time.Before(r.Start) {
			return false
		}
		if h.Kind == End {
			return r.endedBy(&h.Event)
		}
		return h.RunID == r.RunID
	})
}

// declines reports whether ev may say that a run declined to run: an end
// with status skipped, or a skip naming a run id.
func declines(ev *Event) bool {
	return ev.Kind == End && ev.Result == Skipped || ev.Kind == Skip && ev.RunID != ""
}

// overlaps reports whether a run starting on host overlaps one in progress:
// any run of a cluster-scope job, a run on the same host for a host-scope
// job (whose hosts each run it, at the same time).
// A run that declined to run (declinedHeld) is not one to overlap.
func (j *job) overlaps(host string) bool {
	cluster := j.spec.Scope == "cluster"
	return slices.ContainsFunc(j.open, func(r *Run) bool { return (cluster || r.Host == host) && !j.declinedHeld(r) })
}

// RunKey identifies a run: by its run id when the records carry one, else
// by host and PID. A struct, not a string, so applying a record allocates
// nothing for it.
type RunKey struct {
	RunID string
	Host  string
	PID   int
}

func runKey(runID, host string, pid int) RunKey {
	if runID != "" {
		return RunKey{RunID: runID}
	}
	return RunKey{Host: host, PID: pid}
}

// Before orders runs in progress oldest first, ties broken by key: the
// order of InFlight.Sorted.
func (r *Run) Before(o *Run) bool {
	if !r.Start.Equal(o.Start) {
		return r.Start.Before(o.Start)
	}
	return r.Key().less(o.Key())
}

// Key is the run's key: its run id, or host and PID.
func (r *Run) Key() RunKey { return runKey(r.RunID, r.Host, r.PID) }

// compareRuns is Before as a comparison, for sorting and searching.
func compareRuns(a, b *Run) int {
	switch {
	case a.Before(b):
		return -1
	case b.Before(a):
		return 1
	}
	return 0
}

// openAt is the index of the open run of key, -1 when none is.
func (j *job) openAt(key RunKey) int {
	for i, r := range j.open {
		if r.Key() == key {
			return i
		}
	}
	return -1
}

// addOpen adds a run in progress. When that makes more than MaxOpenRuns,
// the oldest other run is removed and returned, ok true (as InFlight.Add).
func (j *job) addOpen(r *Run) (evicted *Run, ok bool) {
	if len(j.open) >= MaxOpenRuns {
		evicted, ok = j.open[0], true
		j.open = slices.Delete(j.open, 0, 1)
	}
	i, _ := slices.BinarySearchFunc(j.open, r, compareRuns)
	j.open = slices.Insert(j.open, i, r)
	j.abandonQuiet = 0
	return evicted, ok
}

// closeOpen removes the open run of key, if there is one.
func (j *job) closeOpen(key RunKey) {
	if i := j.openAt(key); i >= 0 {
		j.open = slices.Delete(j.open, i, i+1)
	}
}

func (k RunKey) less(o RunKey) bool {
	if k.RunID != o.RunID {
		return k.RunID < o.RunID
	}
	if k.Host != o.Host {
		return k.Host < o.Host
	}
	return k.PID < o.PID
}

// findRun finds the open run an end record closes: by run id, else by host
// and PID.
func (j *job) findRun(ev *Event) *Run {
	if i := j.openAt(runKey(ev.RunID, ev.Host, ev.PID)); i >= 0 {
		return j.open[i]
	}
	if ev.PID == 0 {
		return nil
	}
	for _, r := range j.open {
		if r.endedBy(ev) {
			return r
		}
	}
	return nil
}

// endedBy reports whether the end record ev names r: by run id, else by
// host and PID when one of them has no run id.
func (r *Run) endedBy(ev *Event) bool {
	if runKey(ev.RunID, ev.Host, ev.PID) == r.Key() {
		return true
	}
	return ev.PID != 0 && r.Host == ev.Host && r.PID == ev.PID && (ev.RunID == "" || r.RunID == "")
}

// duplicateEndWindow: an end record of a run that ended this recently (by
// the records' times), with no run of that key in progress, repeats that
// end. Only ends that name their run (a run id, or a PID) are compared: two
// ends of a host's runs that carry neither are two runs.
const duplicateEndWindow = time.Minute

// endedJustNow reports whether a run of key ended within duplicateEndWindow
// of t.
func (j *job) endedJustNow(key RunKey, t time.Time) bool {
	if key.RunID == "" && key.PID == 0 {
		return false
	}
	h, at := maphash.Comparable(endedSeed, key), t.UnixNano()
	for _, e := range j.ended.buf {
		if e.key == h && time.Duration(at-e.at).Abs() <= duplicateEndWindow {
			return true
		}
	}
	return false
}

// rememberEnd keeps the key of a run that just ended (the latest
// lostMemory of them; not saved: a restart reads each record once).
func (j *job) rememberEnd(key RunKey, t time.Time) {
	if key.RunID == "" && key.PID == 0 {
		return
	}
	j.ended.push(endedRun{maphash.Comparable(endedSeed, key), t.UnixNano()}, lostMemory)
}

func (j *job) wasLost(key RunKey) bool {
	for _, k := range j.LostRuns {
		if k == key {
			return true
		}
	}
	return false
}

func (j *job) finish(res Result, start, end time.Time, dur time.Duration, hasDur bool, exit int, hasExit bool) {
	j.RunCounts[slices.Index(Results, res)]++
	if hasDur {
		j.observeDuration(dur.Seconds())
		j.Durations.Observe(dur.Seconds())
		j.LastDuration = dur.Seconds()
		j.HasLastDuration = true
	}
	if hasExit {
		j.LastExitCode = exit
		j.HasLastExitCode = true
	}
	if res == Unknown {
		// Neither a success nor a failure: runs in a row of failures go
		// on counting after it.
		if end.After(j.LastUnknown) {
			j.LastUnknown, j.LastUnknownStart = end, start
		}
		return
	}
	if res == Success {
		j.healthy(end)
		if end.After(j.LastSuccess) {
			j.LastSuccess = end
			j.LastSuccessStart = start
		}
		j.ConsecutiveFailures = 0
		return
	}
	if end.After(j.LastFailure) {
		j.LastFailure = end
	}
	j.ConsecutiveFailures++
}

// closeOldest closes as lost a job's oldest open run, which the runs in
// progress let go to make room (see MaxOpenRuns).
func (t *Tracker) closeOldest(j *job, name string, oldest *Run) {
	t.opts.Logger.Warn("too many runs in progress; closing the oldest as lost", ratelog.Per("job"), "job", name, "limit", MaxOpenRuns, "host", oldest.Host, "pid", oldest.PID, "started", oldest.Start)
	t.lose(j, oldest, t.clock.now())
}

// lose closes an open run as lost and remembers it, so that its late end
// record is not counted again.
func (t *Tracker) lose(j *job, r *Run, now time.Time) {
	j.own()
	j.closeByJobwatch(r)
	j.finish(Lost, r.Start, now, 0, false, 0, false)
	j.remember(RecentRunFields{Start: r.Start, End: now, Result: Lost, Host: r.Host, PID: r.PID, Overlapped: r.Overlapped})
}

// closeByJobwatch removes an open run that jobwatch closes (lost, or of
// unknown result) and remembers its key, so that its late end record is
// not counted again.
func (j *job) closeByJobwatch(r *Run) {
	j.closeOpen(r.Key())
	j.LostRuns = append(j.LostRuns, r.Key())
	if len(j.LostRuns) > lostMemory {
		j.LostRuns = j.LostRuns[len(j.LostRuns)-lostMemory:]
	}
}

// endUnlogged closes a run whose end is not logged (Run.EndUnlogged: a
// cron job at -L 1) once its process is gone: it ran and ended, how is not
// known. It ended when its process was first seen gone, if jobwatch saw
// it alive; else (a run of the history read on first start, or one that
// ended while jobwatch was stopped) when is not known either, and it is
// dated at its start, the one time known: a job whose runs stopped days
// ago is not made fresh by reading them now. Its key is remembered as a
// lost run's is, so that an end record that does come after all (a cron
// whose level changed) is not counted as a second run.
func (t *Tracker) endUnlogged(j *job, r *Run) {
	j.own()
	j.closeByJobwatch(r)
	end := r.Start
	if r.seenAlive && r.goneSince.After(r.Start) {
		end = r.goneSince
	}
	j.finish(Unknown, r.Start, end, 0, false, 0, false)
	j.remember(RecentRunFields{Start: r.Start, End: end, Result: Unknown, Host: r.Host, PID: r.PID, Overlapped: r.Overlapped})
}

// Reap decides what every job's watermark allows now (eventtime.go), and
// closes the runs on this host whose process is gone. The exporter calls it
// every few seconds.
func (t *Tracker) Reap() {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.deciding()()
	now := t.clock.now()
	memo := decidableMemo{}
	if t.reapStale || t.reapForgotten > len(t.reapList)/2 {
		t.buildReapList()
	}
	keyTo := make([]reapKeyTo, len(t.reapKeys))
	for i := range t.reapList {
		e := &t.reapList[i]
		if e.j == nil {
			continue
		}
		if t.passOver(e, keyTo, memo, now) {
			t.passedOver++
			continue
		}
		if t.forgetRetired(e.j.spec.Name, e.j, now) {
			e.j = nil
			t.reapForgotten++
			continue
		}
		t.reapJob(memo, e.j, now)
		t.reapVisited(e)
		if int(e.key) >= len(keyTo) {
			keyTo = append(keyTo, make([]reapKeyTo, int(e.key)+1-len(keyTo))...)
		}
	}
	t.keepReapTo(memo)
	t.keepPauses(now)
}

// reapJob decides what j's watermark allows now, and closes its runs on
// this host whose process is gone.
func (t *Tracker) reapJob(memo decidableMemo, j *job, now time.Time) {
	name := j.spec.Name
	t.decideJob(memo, j, now)
	for _, r := range slices.Clone(j.open) { // oldest first, so logs come in one order
		if r.Host != t.opts.Host || r.PID <= 0 {
			continue
		}
		if t.opts.Alive(r.PID) {
			r.goneSince, r.seenAlive = time.Time{}, true
			continue
		}
		if r.goneSince.IsZero() {
			r.goneSince = now
		}
		// Its end record, written before the process went, is dated
		// before it was seen gone: lost only once the job has decided
		// past that, and the end has not come.
		if now.Sub(r.goneSince) < t.opts.LostAfter || !j.decided.After(r.goneSince) || j.endHeld(r) {
			continue
		}
		if r.EndUnlogged {
			t.endUnlogged(j, r)
		} else {
			t.opts.Logger.Info("closing run as lost", "job", name, "host", r.Host, "pid", r.PID, "started", r.Start, "reason", "process is gone")
			t.lose(j, r, now)
		}
		t.markJob(j)
	}
}

// endHeld reports whether the end of r is among the job's records held for
// its watermark: its process is gone because it ended.
func (j *job) endHeld(r *Run) bool {
	return slices.ContainsFunc(j.pending, func(ev Held) bool {
		return ev.Kind == End && (runKey(ev.RunID, ev.Host, ev.PID) == r.Key() || ev.Host == r.Host && ev.PID == r.PID)
	})
}

// SetHealth records whether a source can be read now.
func (t *Tracker) SetHealth(name string, up bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	src := t.sources[name]
	if src == nil {
		return
	}
	if !up && !src.clock.down {
		src.clock.watermark(t.clock.now(), t.clock.now().Sub(t.started) < t.opts.StartupHold) // held where it is now
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
		t.markSource(name)
	}
}

// Now is the model's clock: the wall clock, never going back (see
// steadyClock). Scrapes judge "seconds since" figures by it.
func (t *Tracker) Now() time.Time { return t.clock.now() }

// Position returns the stored position of a source (nil: none yet).
func (t *Tracker) Position(source string) json.RawMessage {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if src := t.sources[source]; src != nil {
		return src.Position
	}
	return nil
}

// JobView is one job's state for rendering and saving. It is never
// changed: the job's next change is made on a copy (job.own).
type JobView struct {
	Spec JobSpec
	*JobState
	History
	Open []Run // sorted by start time
	// Pending are the records held for the job's watermark, not yet
	// applied, in the order they will be.
	Pending []Held
	// DecidedUntil: every record dated up to it has been applied, in time
	// order, and every slot whose grace ended by then decided
	// (eventtime.go); zero until the first decision. As of the job's last
	// change: a job that only moves it on is not saved for that alone.
	DecidedUntil time.Time
	// ended are the job's latest ends, which the facts of Pending are
	// checked against (Shown); facts memoises Shown.
	ended []endedRun
	facts *factsMemo
}

// SourceView is a copy of one source's state for rendering.
type SourceView struct {
	Name, Type string
	Up         bool
	// Reason is why the source is down, as it said (empty while up).
	Reason string
	SourceState
	Observations []observation.Observation // its latest, of kinds besides runs
	clock        sourceClock               // for JobView.DecisionsBehind
}

// View copies the live state, jobs and sources sorted by name. Scrapes
// render the saved state instead (Saved.View), which never shows a counter
// a crash could take back.
func (t *Tracker) View() ([]JobView, []SourceView) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.view()
}

func (t *Tracker) view() ([]JobView, []SourceView) {
	jobs := make([]JobView, 0, len(t.jobs))
	for _, j := range t.jobs {
		jobs = append(jobs, *j.view(t.decidedOf(j)))
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Spec.Name < jobs[b].Spec.Name })
	srcs := make([]SourceView, 0, len(t.sources))
	for name := range t.sources {
		srcs = append(srcs, *t.sourceView(name))
	}
	sort.Slice(srcs, func(a, b int) bool { return srcs[a].Name < srcs[b].Name })
	return jobs, srcs
}
