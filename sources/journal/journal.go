// Package journal reads scheduled runs from the systemd journal: the
// service manager's entries about the configured units, and the cron
// daemon's CMD and END lines. Its saved position is the journal cursor, the
// runs in progress and the most recent ended runs; its identity is the
// journal directory or files.
package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Source reads scheduled runs from the systemd journal: the service
// manager's lifecycle entries of the configured units (timer-driven services)
// and the cron daemon's CMD/END lines. It runs journalctl --output=json, first
// to catch up from the saved cursor, then with --follow, and restarts it with
// backoff whenever it exits.
type Source struct {
	name      string
	units     map[string]string // unit -> job
	unitNames map[string]string // unit -> the same name, shared by the runs
	cron      []cronlog.Rule
	cronLevel int      // cron's -L, or cronlog.Detect
	selector  []string // --directory= / --file= (absolute)
	matches   []string // journalctl match arguments
	dir       string   // directory to check before reading, if any
	// systemDirs are where journald keeps the system journal: a source
	// reading it finds a journal file there before it reads.
	systemDirs []string
	log        *slog.Logger
	now        func() time.Time

	// Tunables; tests shorten them.
	journalctl string
	maxBatch   int           // flush after this many entries
	pause      time.Duration // flush when output pauses this long
	backoffMin time.Duration
	backoffMax time.Duration
	maxLine    int // longer output lines are skipped as parse errors
	maxEnded   int // ended run ids kept in the position for deduplication
	// sleep waits d or until ctx is done (the waker).
	sleep func(ctx context.Context, d time.Duration) bool
	// started, if set, is told of each journalctl process (tests).
	started func(pid int, follow bool)
	// The silence check (silence.go): systemctl, how often it is asked,
	// and how long a run it started may go unread.
	systemctl                  string
	silenceEvery, silenceAfter time.Duration
	// askSystemd: the journal read is this machine's (the system
	// journal), whose service manager systemctl asks.
	askSystemd bool
}

var _ sources.Source = (*Source)(nil)

// New builds a journal source named name. Relative directory and file
// paths are made absolute (journalctl --follow fails on relative ones); the
// config's decoder resolves them against the config file's directory first.
func New(name string, jc Config, deps sources.Deps) (*Source, error) {
	deps = deps.WithDefaults()
	j := &Source{
		name:       name,
		units:      map[string]string{},
		unitNames:  map[string]string{},
		log:        deps.Logger.With("source", name, "type", Type),
		now:        deps.Now,
		journalctl: "journalctl",
		maxBatch:   2000,
		pause:      50 * time.Millisecond,
		backoffMin: time.Second,
		backoffMax: time.Minute,
		maxLine:    4 << 20,
		maxEnded:   512,
		sleep:      sources.Sleep,
		systemDirs: SystemJournalDirs,
		systemctl:  "systemctl",
		// A start entry reaches the follower in milliseconds.
		silenceEvery: 30 * time.Second,
		silenceAfter: time.Minute,
	}
	if err := j.selectJournal(jc.Directory, jc.Files); err != nil {
		return nil, fmt.Errorf("journal source %q: %w", name, err)
	}
	groups := j.unitMatches(jc.Units)
	if err := j.compileCron(jc.Cron); err != nil {
		return nil, fmt.Errorf("journal source %q: %w", name, err)
	}
	j.cronLevel = cronlog.Detect
	if jc.CronLogLevel != nil {
		j.cronLevel = *jc.CronLogLevel
	}
	if len(j.cron) > 0 {
		// CRON: the lines of cron's children about jobs; cron: the
		// daemon's, which says when it starts (at a new -L, maybe).
		groups = append(groups, []string{"SYSLOG_IDENTIFIER=CRON", "SYSLOG_IDENTIFIER=cron"})
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("journal source %q: needs units or cron", name)
	}
	j.askSystemd = len(j.selector) == 0
	if m := j.machineMatch(); m != "" {
		for i := range groups {
			groups[i] = append(groups[i], m)
		}
	}
	for i, g := range groups {
		if i > 0 {
			j.matches = append(j.matches, "+")
		}
		j.matches = append(j.matches, g...)
	}
	return j, nil
}

// MachineIDFile holds this machine's ID (machine-id(5)).
var MachineIDFile = "/etc/machine-id"

// machineMatch is the match that keeps the system journal's entries of
// this machine, as journalctl shows them without --merge (which the
// follower needs: see args), when journald keeps this machine's journal
// (a directory named by its ID in /var/log/journal or /run/log/journal).
// It is "" when reading a directory or files (the journals chosen), when
// the machine's ID cannot be read, or when no journal is this machine's:
// a container given the host's journal reads it whole, as before.
func (j *Source) machineMatch() string {
	if len(j.selector) > 0 {
		return ""
	}
	b, err := os.ReadFile(MachineIDFile)
	id := strings.TrimSpace(string(b))
	if err != nil || len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		j.log.Debug("cannot read this machine's ID: the journal is read whole", "file", MachineIDFile, "err", err)
		return ""
	}
	for _, d := range j.systemDirs {
		if st, err := os.Stat(filepath.Join(d, id)); err == nil && st.IsDir() {
			return "_MACHINE_ID=" + id
		}
	}
	j.log.Debug("no journal of this machine's ID: the journal is read whole", "machine_id", id)
	return ""
}

// selectJournal sets the journalctl arguments that read the directory or
// the files instead of the system's journal.
func (j *Source) selectJournal(dir string, files []string) error {
	if dir != "" && len(files) > 0 {
		return errors.New("directory and files are exclusive")
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("directory: %w", err)
		}
		j.dir = abs
		j.selector = append(j.selector, "--directory="+abs)
	}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return fmt.Errorf("file: %w", err)
		}
		j.selector = append(j.selector, "--file="+abs)
	}
	return nil
}

// unitMatches records the units' jobs and returns the journalctl match
// groups that select the units' entries.
func (j *Source) unitMatches(jobs map[string]string) [][]string {
	units := make([]string, 0, len(jobs))
	for u, job := range jobs {
		j.units[u] = job
		j.unitNames[u] = u
		units = append(units, u)
	}
	if len(units) == 0 {
		return nil
	}
	sort.Strings(units)
	// UNIT= selects the service manager's entries about a unit,
	// _SYSTEMD_UNIT= the unit's own output (which carries its PID). Matches
	// on one field are ORed by journalctl, matches on different fields
	// ANDed unless "+" separates them: one group per field, not one per
	// unit and field, each term one lookup in the journal's field index.
	var byUnit, byOwn []string
	for _, u := range units {
		byUnit = append(byUnit, "UNIT="+u)
		byOwn = append(byOwn, "_SYSTEMD_UNIT="+u)
	}
	return [][]string{byUnit, byOwn}
}

// compileCron compiles the cron daemon's line matchers.
func (j *Source) compileCron(matchers []CronMatch) error {
	for i, m := range matchers {
		re, err := regexp.Compile(m.Match)
		if err != nil {
			return fmt.Errorf("cron[%d].match: %w", i, err)
		}
		j.cron = append(j.cron, cronlog.Rule{Re: re, Job: m.Job})
	}
	return nil
}

func (j *Source) Name() string { return j.name }
func (j *Source) Type() string { return Type }

// journalPosition is the Position of a journal source's batches.
type journalPosition struct {
	// Cursor and Realtime (µs) of the last entry read.
	Cursor   string `json:"cursor,omitempty"`
	Realtime int64  `json:"realtime,omitempty"`
	// Open runs whose start was read and whose end was not yet.
	Open []journalRun `json:"open,omitempty"`
	// Ended: the most recent ended runs, to drop replayed entries.
	Ended []endedRun `json:"ended,omitempty"`
	// Floor: the end time of the newest run dropped from Ended; entries
	// about runs not open and not later than it are replays.
	Floor int64 `json:"floor,omitempty"`
}

type journalRun struct {
	ID          string `json:"id"` // INVOCATION_ID, or cron:<host>:<the job's pid>
	Job         string `json:"job"`
	Host        string `json:"host,omitempty"`
	PID         int    `json:"pid,omitempty"`
	Start       int64  `json:"start"` // µs
	ExitCode    int    `json:"exit_code,omitempty"`
	HasExitCode bool   `json:"has_exit_code,omitempty"`
	// Cmd: a cron run's command's cronlog.CmdHash (not the command, which
	// may hold a password): its END line, which names no PID without
	// -L 8, finds it by that after a restart.
	Cmd uint64 `json:"cmd_hash,omitempty"`
}

// Before orders runs in progress oldest first, ties broken by id.
func (r *journalRun) Before(o *journalRun) bool {
	if r.Start != o.Start {
		return r.Start < o.Start
	}
	return r.ID < o.ID
}

type endedRun struct {
	ID  string `json:"id"`
	End int64  `json:"end"` // µs
}

var cursorRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^s=[0-9a-f]{32};i=[0-9a-f]+;b=[0-9a-f]{32};m=[0-9a-f]+;t=[0-9a-f]+;x=[0-9a-f]+$`)
})

// Run reads the journal until ctx is done.
func (j *Source) Run(ctx context.Context, from json.RawMessage, sink sources.Sink) error {
	r := j.newReader(from, sink)
	backoff := j.backoffMin
	h := sources.NewHealth(j.name, sink, j.log)
	h.DownMsg, h.UpMsg = "cannot read the journal", "journal readable again"
	health := &sharedHealth{h: h}
	var wg sync.WaitGroup
	wctx, stopWatch := context.WithCancel(ctx)
	wg.Go(func() { j.watchSilence(wctx, r.silence, health) })
	defer wg.Wait()
	defer stopWatch()
	var lastFollowErr string
	for ctx.Err() == nil {
		err := r.check()
		if err == nil {
			err = r.read(ctx, false)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			health.setRead(nil)
			began := time.Now()
			err = r.read(ctx, true)
			if ctx.Err() != nil {
				return nil
			}
			if time.Since(began) >= j.backoffMax {
				backoff = j.backoffMin // it ran well for a while
			}
			// Any exit of the follower is an error: restart it from the
			// saved cursor (catching up first), logging each new reason once.
			if msg := err.Error(); msg != lastFollowErr {
				j.log.Warn("journalctl --follow exited; restarting", "err", err, "backoff", backoff)
				lastFollowErr = msg
			} else {
				j.log.Debug("journalctl --follow exited; restarting", "err", err, "backoff", backoff)
			}
		} else {
			health.setRead(err)
		}
		if !j.sleep(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, j.backoffMax)
	}
	return nil
}

// newReader reads on from the position saved in from; one unreadable, or
// with a malformed cursor, is reset.
func (j *Source) newReader(from json.RawMessage, sink sources.Sink) *journalReader {
	r := &journalReader{j: j, sink: sink, open: model.InFlight[string, *journalRun]{}, cron: cronlog.New(j.cron, j.cronLevel),
		silence: newSilenceWatch()}
	if len(from) > 0 {
		var p journalPosition
		if err := json.Unmarshal(from, &p); err != nil {
			j.log.Warn("saved journal position is unreadable; reading the journal from its start", "err", err)
			r.resets++
		} else {
			r.pos = p
			for i := range p.Open {
				run := p.Open[i]
				r.open[run.ID] = &run
			}
			r.open.Trim()
			for _, run := range r.open {
				if strings.HasPrefix(run.ID, "cron:") && run.Cmd != 0 {
					r.cron.Restore(run.Host, run.PID, run.Job, run.Cmd)
				}
			}
		}
	}
	if r.pos.Cursor != "" && !cursorRE().MatchString(r.pos.Cursor) {
		j.log.Warn("saved journal cursor is malformed; continuing from its time", "cursor", r.pos.Cursor, "realtime", r.pos.Realtime)
		r.pos.Cursor = ""
		r.resets++
	}
	return r
}

// journalReader is the state of one Run.
type journalReader struct {
	j       *Source
	sink    sources.Sink
	pos     journalPosition
	open    model.InFlight[string, *journalRun] // runs in progress
	cron    *cronlog.Matcher                    // links cron's lines of a run
	silence *silenceWatch                       // the starts read, for the silence check

	// Pending batch.
	batch    model.Batch
	pending  int            // entries read since the last flush
	startIdx map[string]int // run id -> index of its Start in batch.Events
	resets   int            // position resets not yet handed over
	atEnd    bool           // the last batch handed over said AtEnd

	// Cursor handling of the current journalctl run.
	expect     string // the saved cursor, printed first if it still exists
	first      bool   // no entry read yet in this journalctl run
	skipBefore int64  // after a reset: entries older than this were read before
	lostCursor string // a cursor already counted as gone
	cursor     []byte // the last entry's cursor, not yet in pos
	cursorNew  bool

	hosts    map[string]string // host names seen, each kept once
	endedIdx map[string]int    // run id -> its last index in pos.Ended; nil: to be built
}

// line applies one output line of journalctl.
func (r *journalReader) line(l []byte) {
	r.pending++
	if l == nil {
		r.batch.ParseErrors++
		r.j.log.Debug("skipping an over-long journal entry")
		return
	}
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	var e journalEntry
	if err := decodeJournalEntry(l, &e); err != nil {
		r.batch.ParseErrors++
		r.j.log.Debug("skipping an unreadable journal entry", "err", err)
		return
	}
	if r.first {
		r.first = false
		if r.expect != "" {
			if e.Cursor.is(r.expect) {
				return // applied before
			}
			r.cursorGone(r.expect)
		}
	}
	// The cursor is copied into r.pos when the batch is flushed, not for
	// every entry.
	r.cursor = append(r.cursor[:0], e.Cursor.b...)
	r.cursorNew = true
	r.pos.Realtime = e.rt
	if r.skipBefore > 0 {
		if e.rt < r.skipBefore {
			return
		}
		r.skipBefore = 0
	}
	r.apply(&e)
}

// cursorGone handles a saved cursor that no longer exists (vacuumed or
// rotated away, or from another journal): reading goes on from the oldest
// entry after its time.
func (r *journalReader) cursorGone(cursor string) {
	r.skipBefore = r.pos.Realtime
	if cursor == r.lostCursor {
		return
	}
	r.lostCursor = cursor
	r.resets++
	r.j.log.Warn("saved journal cursor no longer exists; continuing after its time",
		"cursor", cursor, "time", time.UnixMicro(r.pos.Realtime).UTC())
}

// flush hands the pending batch over. atEnd: it ends what there was to
// read (see read). With nothing pending the batch has only that to say,
// and no position (nothing new to save); it is not said twice in a row (a
// follower that exits on an empty journal is restarted again and again).
func (r *journalReader) flush(atEnd bool) {
	if r.cursorNew {
		r.pos.Cursor = string(r.cursor)
		r.cursorNew = false
	}
	if r.pending == 0 && r.resets == 0 {
		if atEnd && !r.atEnd {
			r.atEnd = true
			r.sink.Apply(model.Batch{Source: r.j.name, AtEnd: true})
		}
		return
	}
	r.batch.Source = r.j.name
	r.batch.AtEnd, r.atEnd = atEnd, atEnd
	r.batch.PositionResets = r.resets
	r.batch.Position = r.position()
	r.sink.Apply(r.batch)
	r.batch = model.Batch{}
	r.pending = 0
	r.resets = 0
	clear(r.startIdx)
}

func (r *journalReader) position() json.RawMessage {
	p := r.pos
	p.Open = nil
	for _, run := range r.open.Sorted() {
		p.Open = append(p.Open, *run)
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return b
}
