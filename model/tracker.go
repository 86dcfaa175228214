package model

import (
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"syscall"
	"time"

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
	MinDuration   time.Duration
	Scope         string // "host" or "cluster"
	StaleMultiple int
	// AbandonAfter: a run jobwatch cannot check, of a job without
	// timeout, is closed as lost this long after its start when nothing
	// else says it is over (0: DefaultAbandonAfter; abandoned.go).
	AbandonAfter time.Duration
	// Persistent: a systemd timer with Persistent=, which runs an elapse
	// missed while the host was off (or the timer stopped) at once, late:
	// that run is the last missed elapse's (missedCutoff, attribute).
	// Discovered: host mode (discovery.watch) found the job on the host,
	// and no job of the config names it. One that disappears is retired,
	// not dropped (see Configure). The two flags share a word: a JobView,
	// which holds a spec, is then 288 bytes (a size class) rather than 320.
	Persistent, Discovered bool
	// Labels and AlertAfter are the config's labels: and alert_after:,
	// kept for the collector and the status page (ownership.go).
	Labels     map[string]string
	AlertAfter AlertAfter
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

// Tracker is the job model, and the façade of its parts (docs/development.md):
//   - each job's state machine: its state (job) and the transitions every
//     record and every decision make of it (machine), which know no clock
//     and do no I/O of their own;
//   - the orderer, which takes the sources' batches, holds each job's
//     records until every source that reports it has passed them (its
//     watermark), and releases them to the state machine in time order
//     (order.go, eventtime.go, reapindex.go);
//   - the change log the saver reads (changes.go).
//
// The Tracker owns the lock, the clock and what outlives a configuration
// (retired sources, host clocks). It is safe for concurrent use.
type Tracker struct {
	opts  Options
	clock steadyClock

	mu      sync.RWMutex
	order   *orderer
	log     changeLog
	retired map[string]SourceState // of sources no longer configured
	// skews are other hosts' clock offsets, as their records show them
	// (hostskew.go).
	skews hostSkews
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
	t := &Tracker{opts: o, retired: map[string]SourceState{}, log: newChangeLog()}
	t.clock = steadyClock{wall: o.Now, mono: o.Mono, logger: o.Logger}
	t.order = newOrderer(&t.opts, &t.clock, &t.log, &t.skews)
	return t
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
// The tracker keeps jobs, its jobs' specs: the caller does not change them
// afterwards.
func (t *Tracker) Configure(jobs []JobSpec, sources []SourceSpec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, src := range t.order.configure(jobs, sources, t.clock.now()) {
		t.retire(name, src.SourceState)
	}
	t.adoptRetired()
	t.log.changedAll() // specs changed: every job's view does
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
	t.log.retiredChanged = true
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
	for name, src := range t.order.marks.sources {
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
			t.log.retiredChanged = true
			t.log.markSource(name)
			t.opts.Logger.Info("source takes over a position read before", "source", name, "from", from)
		}
	}
}

// SetRetiredRetention sets how long a retired job is kept after it was
// retired (discovery.retired_retention; 0, as a Tracker starts: until it
// comes back); Reap forgets it then.
func (t *Tracker) SetRetiredRetention(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order.retention = max(d, 0)
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
	t.order.applyBatch(&b, t.order.take)
}

// CaughtUp is signalled (at most one pending signal) when a source reaches
// the end of what it has to read after a catch-up: the records read are
// decided then, and the saver commits them at once rather than within its
// budget for streams.
func (t *Tracker) CaughtUp() <-chan struct{} { return t.order.caughtUp }

// Reap decides what every job's watermark allows now (eventtime.go), and
// closes the runs on this host whose process is gone. The exporter calls it
// every few seconds.
func (t *Tracker) Reap() {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.log.deciding()()
	t.order.reapPass(t.clock.now())
	keepPauses(t.order.jobs, &t.log, t.opts.Logger, t.clock.now())
}

// DecideHeld decides what the watermarks allow now for the jobs that hold
// records, so that a record shows about its source's late window after it
// was read rather than at the next Reap. It looks at no other job, and
// reports whether records are still held: the exporter calls it often
// while they are, from a signal of Held until it reports none.
func (t *Tracker) DecideHeld() (holding bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.log.deciding()()
	return t.order.decideHeld(t.clock.now())
}

// Held is signalled when records are held for their watermark while none
// was, once until DecideHeld reports that none is: DecideHeld is due until
// then, and not otherwise (a decide tick ten times a second that finds
// nothing held was a fifth of the wake-ups of a stream).
func (t *Tracker) Held() <-chan struct{} { return t.order.held }

// SetHealth records whether a source can be read now.
func (t *Tracker) SetHealth(name string, up bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order.setHealth(name, up, err, t.clock.now())
}

// Now is the model's clock: the wall clock, never going back (see
// steadyClock). Scrapes judge "seconds since" figures by it.
func (t *Tracker) Now() time.Time { return t.clock.now() }

// Position returns the stored position of a source (nil: none yet).
func (t *Tracker) Position(source string) json.RawMessage {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if src := t.order.marks.sources[source]; src != nil {
		return src.Position
	}
	return nil
}

// JobView is one job's state for rendering and saving. It is never
// changed: the job's next change is made on a copy (job.own).
type JobView struct {
	// Spec is the model's spec of the job, shared: never changed after
	// Configure (see Configure), and not to be changed through a view. A
	// pointer, not a copy: a copy was 152 bytes a job in every view.
	Spec *JobSpec
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
	// facts memoises Shown (nil: no record held, or a view not taken of
	// a job).
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
	clock        sourceClock               // for DecisionsBehind
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
	jobs := make([]JobView, 0, len(t.order.jobs))
	for _, j := range t.order.jobs {
		jobs = append(jobs, *j.view(t.order.reap.decidedOf(j)))
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Spec.Name < jobs[b].Spec.Name })
	srcs := make([]SourceView, 0, len(t.order.marks.sources))
	for name := range t.order.marks.sources {
		srcs = append(srcs, *t.order.sourceView(name))
	}
	sort.Slice(srcs, func(a, b int) bool { return srcs[a].Name < srcs[b].Name })
	return jobs, srcs
}
