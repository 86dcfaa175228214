// Package journal reads scheduled runs from the systemd journal: the
// service manager's entries about the configured units, and the cron
// daemon's CMD and END lines. Its saved position is the journal cursor, the
// runs in progress and the most recent ended runs; its identity is the
// journal directory or files.
package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
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

// SystemJournalDirs are where journald keeps the system journal:
// persistent, then volatile.
var SystemJournalDirs = []string{"/var/log/journal", "/run/log/journal"}

// check fails when there is no journal to read: the configured directory
// gone, or no journal file where journalctl would look (a container
// without journald). journalctl itself reads nothing there and exits 0,
// and its follower then fails for want of a boot: the source would show
// up and empty instead of down. Run checks again at each retry, so the
// source comes up once a journal appears.
func (r *journalReader) check() error {
	switch {
	case r.j.dir != "":
		st, err := os.Stat(r.j.dir)
		if err != nil {
			return fmt.Errorf("journal directory: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("journal directory %s is not a directory", r.j.dir)
		}
		if !hasJournalFiles(r.j.dir) {
			return fmt.Errorf("no journal files in %s: nothing writes a journal there", r.j.dir)
		}
	case len(r.j.selector) > 0:
		// Files (or globs of them): journalctl fails on one it cannot open.
	default:
		if !slices.ContainsFunc(r.j.systemDirs, hasJournalFiles) {
			return fmt.Errorf("no journal files in %s: journald does not run here (a container?); cron jobs wrapped in jobwatch run are read from the run log", strings.Join(r.j.systemDirs, " or "))
		}
	}
	return nil
}

// hasJournalFiles reports whether dir, or a directory in it (journald's
// per-machine ones), holds a journal file, as journalctl --directory
// reads them: active (.journal) or archived by journald (.journal~).
func hasJournalFiles(dir string) bool {
	for _, pattern := range []string{"*.journal", "*.journal~", "*/*.journal", "*/*.journal~"} {
		if m, _ := filepath.Glob(filepath.Join(filepath.Clean(dir), pattern)); len(m) > 0 {
			return true
		}
	}
	return false
}

func (r *journalReader) args(follow bool) []string {
	a := append([]string{}, r.j.selector...)
	a = append(a, "--output=json", "--output-fields="+journalOutputFields, "--no-pager")
	switch {
	case r.pos.Cursor != "":
		// --cursor rather than --after-cursor: when the cursor's entry is
		// gone, --after-cursor silently skips the first surviving entry.
		// The entry at the cursor is dropped in handle.
		a = append(a, "--cursor="+r.pos.Cursor)
	case r.pos.Realtime > 0:
		a = append(a, fmt.Sprintf("--since=@%d.%06d", r.pos.Realtime/1e6, r.pos.Realtime%1e6))
	case follow:
		a = append(a, "--no-tail")
	}
	if follow {
		// --follow alone shows one boot only (journalctl implies --boot
		// unless --merge is given; --boot=all does not undo it): the
		// running kernel's boot ID for the system journal (which
		// ProtectKernelTunables=, in a container, shows as the host
		// kernel's: nothing is shown, ever), the newest boot at its start
		// for a directory (a boot that begins later is never shown). The
		// cursor says where to go on from, in whatever boot. --merge also
		// opens other machines' journals: the system journal's matches
		// name this machine (machineMatch).
		a = append(a, "--follow", "--merge")
	}
	return append(a, r.j.matches...)
}

// read runs journalctl once and applies what it prints. Without follow it
// returns nil when journalctl exits 0 after printing everything; with follow
// it returns only on an error, journalctl's exit, or when ctx is done. The
// batches that say AtEnd are the last of a catch-up pass that exited
// cleanly and, following, each one that a pause of journalctl's output
// ends.
func (r *journalReader) read(ctx context.Context, follow bool) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stderr := &tailBuffer{max: 4096}
	cmd, out, err := r.startJournalctl(cctx, follow, stderr)
	if err != nil {
		return err
	}
	r.expect = r.pos.Cursor
	r.first = true

	lines := make(chan [][]byte, 4)
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lines)
		readErr = readLines(cctx, out, r.j.maxLine, lines)
	}()
	r.applyOutput(ctx, lines, follow)

	// A catch-up pass's last batch waits for journalctl's exit: only a
	// clean exit says it printed everything the journal held.
	held := !follow && ctx.Err() == nil
	if !held {
		r.flush(false)
	}
	if ctx.Err() != nil {
		cancel() // kills journalctl
	}
	wg.Wait()
	if readErr != nil {
		cancel()
	}
	// Cancelling only when needed: Wait reports a cancelled context as an
	// error even after a clean exit.
	waitErr := cmd.Wait()
	if r.first && r.expect != "" && ctx.Err() == nil && !follow {
		// journalctl printed nothing, not even the saved cursor's entry: it is gone.
		r.cursorGone(r.expect)
	}
	err = exitError(follow, readErr, waitErr, stderr)
	if held {
		r.flush(err == nil && ctx.Err() == nil)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startJournalctl starts journalctl, its standard error kept in stderr, and returns
// its standard output.
func (r *journalReader) startJournalctl(ctx context.Context, follow bool, stderr *tailBuffer) (*exec.Cmd, io.Reader, error) {
	args := r.args(follow)
	cmd := exec.CommandContext(ctx, r.j.journalctl, args...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("journalctl: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting journalctl: %w", err)
	}
	r.j.log.Debug("journalctl started", "args", strings.Join(args, " "), "pid", cmd.Process.Pid)
	if r.j.started != nil {
		r.j.started(cmd.Process.Pid, follow)
	}
	return cmd, out, nil
}

// applyOutput applies the chunks of lines until they end or ctx is done, handing
// a batch over when it is full and when journalctl's output pauses.
func (r *journalReader) applyOutput(ctx context.Context, lines <-chan [][]byte, follow bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var pidWait time.Time // when a start's PID is waited for no longer
	for {
		select {
		case chunk, ok := <-lines:
			if !ok {
				return
			}
			for _, l := range chunk {
				r.line(l)
			}
			if r.pending >= r.j.maxBatch {
				r.flush(false) // more may be waiting in the pipe
			}
			if r.pending > 0 {
				timer.Reset(r.j.pause)
			}
		case <-timer.C:
			// journalctl has printed nothing for a pause. Following, it
			// has printed every entry the journal holds: --follow prints
			// what there is, flushes its output and only then waits for
			// more, so its output pauses there and nowhere else but for a
			// stall (the follower starts from the cursor a catch-up pass
			// has just reached, so the little it prints first is recent
			// anyway). That pause is where the source knows it is caught
			// up: the batch says AtEnd. A catch-up pass pausing is only
			// slow: its end is its exit, below.
			//
			// On a loaded machine journalctl may also pause between a
			// run's start and its process's first output line, which
			// carries its PID (unitOutput): a start in the batch without
			// one waits up to startPIDWait for it.
			if follow && r.startWithoutPID() {
				if pidWait.IsZero() {
					pidWait = time.Now().Add(startPIDWait)
				}
				if time.Now().Before(pidWait) {
					timer.Reset(r.j.pause)
					continue
				}
			}
			pidWait = time.Time{}
			r.flush(follow)
		case <-ctx.Done():
			return
		}
	}
}

// startPIDWait is how long a batch holding a run's start whose PID is not
// known yet waits for its process's output after journalctl pauses: a
// start handed over without its PID keeps none (the model cannot then
// check the process), and a unit that prints nothing delays its start by
// this much.
const startPIDWait = 500 * time.Millisecond

// startWithoutPID reports whether the batch holds a run's start whose PID
// is not known and that has not ended (after its end no output of it
// comes).
func (r *journalReader) startWithoutPID() bool {
	for id, i := range r.startIdx {
		if r.batch.Events[i].PID == 0 && r.open[id] != nil {
			return true
		}
	}
	return false
}

// exitError is why a run of journalctl did not read the journal through:
// nil only for a catch-up pass that exited cleanly having read all of it.
func exitError(follow bool, readErr, waitErr error, stderr *tailBuffer) error {
	if readErr != nil && !errors.Is(readErr, context.Canceled) {
		return fmt.Errorf("reading journalctl output: %w", readErr)
	}
	if waitErr != nil {
		return fmt.Errorf("journalctl: %w: %s", waitErr, stderr.last())
	}
	if follow {
		return fmt.Errorf("journalctl --follow exited: %s", stderr.last())
	}
	if s := stderr.String(); strings.Contains(s, "No journal files were found") {
		// Some versions exit 0 on finding none (check looks first).
		return fmt.Errorf("journalctl found no journal files: %s", stderr.last())
	}
	if s := stderr.String(); strings.Contains(s, "insufficient permissions") || strings.Contains(s, "not seeing messages from other users") {
		// journalctl exits 0 when it may read only some journal files.
		return fmt.Errorf("journalctl cannot read the whole journal (add jobwatch's user to group systemd-journal): %s", stderr.last())
	}
	return nil
}

// readLines sends out's lines in chunks, each chunk what was available
// without blocking. Lines longer than maxLine are replaced by nil.
func readLines(ctx context.Context, out io.Reader, maxLine int, lines chan<- [][]byte) error {
	br := bufio.NewReaderSize(out, 256<<10)
	var chunk [][]byte
	// A chunk's lines are copied into a few blocks rather than one
	// allocation each; a block is never written again once full.
	var arena []byte
	var long []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !tooLong {
				long = append(long, frag...)
				if len(long) > maxLine {
					long, tooLong = nil, true
				}
			}
			continue
		case len(frag) > 0 && frag[len(frag)-1] == '\n':
			var l []byte
			if !tooLong {
				n := len(long) + len(frag)
				if cap(arena)-len(arena) < n {
					// A new block for the line and what is buffered
					// behind it, about what the chunk will still hold.
					arena = make([]byte, 0, n+min(br.Buffered(), 256<<10))
				}
				start := len(arena)
				arena = append(arena, long...)
				arena = append(arena, frag...)
				l = arena[start:len(arena):len(arena)]
			}
			long, tooLong = nil, false
			chunk = append(chunk, l)
		}
		if len(chunk) > 0 && (br.Buffered() == 0 || len(chunk) >= 512 || err != nil) {
			select {
			case lines <- chunk:
			case <-ctx.Done():
				return ctx.Err()
			}
			chunk = nil // the arena's rest is for the next chunk: its lines lie past every line sent
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
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

func (r *journalReader) apply(e *journalEntry) {
	if e.Unit.ok && e.MessageID.ok {
		if unit, job, ok := r.unit(e.Unit.b); ok {
			r.unitEntry(e, unit, job)
			return
		}
	}
	if e.SystemdUnit.ok {
		if unit, _, ok := r.unit(e.SystemdUnit.b); ok {
			r.unitOutput(e, unit)
			return
		}
	}
	if len(r.j.cron) > 0 && (e.SyslogIdentifier.is("CRON") || e.SyslogIdentifier.is("cron")) {
		r.cronEntry(e)
	}
}

// unit looks up a configured unit by name, returning its name as a shared
// string (not a copy of the entry's bytes) and its job.
func (r *journalReader) unit(name []byte) (unit, job string, ok bool) {
	job, ok = r.j.units[string(name)]
	if !ok {
		return "", "", false
	}
	return r.j.unitNames[string(name)], job, true
}

// host returns the entry's _HOSTNAME. A journal names few hosts: each name
// is copied once, not once for every entry.
func (r *journalReader) host(e *journalEntry) string {
	if h, ok := r.hosts[string(e.Hostname.b)]; ok {
		return h
	}
	if r.hosts == nil || len(r.hosts) >= maxHosts {
		r.hosts = map[string]string{}
	}
	h := e.Hostname.String()
	r.hosts[h] = h
	return h
}

// maxHosts bounds the reader's table of host names; a full table is cleared.
const maxHosts = 256

// unitKey is the id of the run an entry of the service manager is about.
// It is looked up far more often than it is kept: only start copies it.
func (r *journalReader) unitKey(e *journalEntry, unit string) string {
	if e.InvocationID.ok && len(e.InvocationID.b) > 0 {
		if run := r.open[string(e.InvocationID.b)]; run != nil {
			return run.ID
		}
		return e.InvocationID.String()
	}
	return unit + "@" + r.host(e) // systemd before v232 logs no invocation IDs
}

// unitEntry applies an entry of the service manager about a configured unit.
func (r *journalReader) unitEntry(e *journalEntry, unit, job string) {
	switch string(e.MessageID.b) {
	case msgUnitStarting:
		if e.JobType.ok && !e.JobType.is("start") {
			return
		}
		r.silence.sawStart(unit, e.rt)
		r.start(e, r.unitKey(e, unit), job, 0)
	case msgUnitProcessExit:
		run := r.open[r.unitKey(e, unit)]
		if run == nil {
			return
		}
		if e.ExitCode.is("exited") {
			if st, ok := atoiInt(e.ExitStatus.b); ok {
				run.ExitCode, run.HasExitCode = st, true
			}
		} else {
			run.HasExitCode = false // killed or dumped: EXIT_STATUS is a signal
		}
	case msgUnitSuccess:
		r.end(e, r.unitKey(e, unit), job, model.Success, true)
	case msgUnitFailureResult:
		res := model.Failure
		if e.UnitResult.is("timeout") {
			res = model.Timeout
		}
		r.end(e, r.unitKey(e, unit), job, res, true)
	case msgUnitFailed:
		// Ends a run only if its start was seen: a start job that failed on
		// a dependency or a condition never ran anything. After a
		// FAILURE_RESULT entry the run is no longer open.
		res := model.Failure
		if e.JobResult.is("timeout") {
			res = model.Timeout
		}
		r.end(e, r.unitKey(e, unit), job, res, false)
	}
}

// unitOutput notes the PID of a run from its process's own output. Only
// stdout entries count: journald stamps every line of a stdout stream with
// the PID of the process that opened it, which for ExecStart= is the main
// process (systemd connects the stream before exec), even when a child
// wrote the line. Syslog and native entries carry the writer's own PID,
// which may be a short-lived child.
func (r *journalReader) unitOutput(e *journalEntry, unit string) {
	if !e.Transport.is("stdout") {
		return
	}
	var run *journalRun
	if len(e.SystemdInvocationID.b) > 0 {
		run = r.open[string(e.SystemdInvocationID.b)]
	} else {
		run = r.open[unit+"@"+r.host(e)]
	}
	if run == nil || run.PID != 0 {
		return
	}
	pid, ok := atoiInt(e.PID.b)
	if !ok || pid <= 0 {
		return
	}
	run.PID = pid
	if i, ok := r.startIdx[run.ID]; ok {
		r.batch.Events[i].PID = pid
	}
}

// cronEntry applies a line of the cron daemon, through the one matcher of
// cron's lines (internal/cronlog), which links a run's CMD, error and END
// lines whichever process logged them.
func (r *journalReader) cronEntry(e *journalEntry) {
	pid, ok := atoiInt(e.PID.b)
	if !ok || pid <= 0 {
		return
	}
	host := r.host(e)
	run, ok := r.cron.Match(host, e.SyslogIdentifier.b, pid, e.Message.b)
	if !ok || run.Job == "" {
		return
	}
	// A run is known by its job's PID; an END line of a run whose start
	// was not read, without -L 8, by the cron child that logged it.
	id := "cron:" + host + ":" + strconv.Itoa(run.PID)
	if run.PID == 0 {
		id = "cron:" + host + ":child:" + strconv.Itoa(pid)
	}
	if run.Kind == cronlog.Start {
		if o := r.open[id]; o != nil && o.Start != e.rt {
			delete(r.open, id) // the PID was reused: the old run's END was never seen
		}
		r.start(e, id, run.Job, run.PID)
		if o := r.open[id]; o != nil && o.Start == e.rt {
			o.Cmd = r.cron.Command(host, run.PID)
		}
		if i, ok := r.startIdx[id]; ok {
			r.batch.Events[i].EndUnlogged = run.EndUnlogged
		}
		return
	}
	if o := r.open[id]; o != nil {
		o.ExitCode, o.HasExitCode = run.ExitCode, run.HasExitCode
	}
	n := len(r.batch.Events)
	r.end(e, id, run.Job, model.Result(run.Result), true)
	if len(r.batch.Events) > n {
		ev := &r.batch.Events[n]
		ev.ExitCode, ev.HasExitCode = run.ExitCode, run.HasExitCode
	}
}

// replayed reports whether an entry about run id at time t was applied before.
func (r *journalReader) replayed(id string, t int64, isEnd bool) bool {
	if r.endedIdx == nil {
		r.indexEnded()
	}
	if i, ok := r.endedIdx[id]; ok {
		x := r.pos.Ended[i]
		if !strings.HasPrefix(id, "cron:") {
			return true // invocation IDs never repeat
		}
		// Cron run ids repeat when PIDs are reused: only entries up to
		// that run's end belong to it.
		if isEnd {
			return t == x.End
		}
		return t <= x.End
	}
	return t <= r.pos.Floor
}

// indexEnded maps each run id of pos.Ended to its last index there: the
// entry replayed looks at, found without a scan of the whole list.
func (r *journalReader) indexEnded() {
	r.endedIdx = make(map[string]int, len(r.pos.Ended))
	for i, x := range r.pos.Ended {
		r.endedIdx[x.ID] = i
	}
}

func (r *journalReader) start(e *journalEntry, id, job string, pid int) {
	if _, ok := r.open[id]; ok || r.replayed(id, e.rt, false) {
		return
	}
	host := r.host(e)
	run := &journalRun{ID: id, Job: job, Host: host, PID: pid, Start: e.rt}
	if old, full := r.open.Add(id, run); full {
		r.j.log.Warn("too many open runs; forgetting the oldest", "job", old.Job, "run_id", old.ID,
			"start", time.UnixMicro(old.Start).UTC(), "limit", model.MaxOpenRuns)
	}
	if r.startIdx == nil {
		r.startIdx = map[string]int{}
	}
	r.startIdx[id] = len(r.batch.Events)
	r.batch.Events = append(r.batch.Events, model.Event{
		Time: time.UnixMicro(e.rt), Job: job, Kind: model.Start,
		Host: host, PID: pid, RunID: id,
	})
}

// end ends run id. Without a seen start it emits an End only if definite
// (the entry can only mean that a run ended).
func (r *journalReader) end(e *journalEntry, id, job string, res model.Result, definite bool) {
	run := r.open[id]
	if run == nil && (!definite || r.replayed(id, e.rt, true)) {
		return
	}
	ev := model.Event{Time: time.UnixMicro(e.rt), Job: job, Kind: model.End, Host: r.host(e), RunID: id, Result: res}
	if run != nil {
		ev.Job = run.Job
		ev.PID = run.PID
		ev.ExitCode, ev.HasExitCode = run.ExitCode, run.HasExitCode
		if e.rt >= run.Start {
			ev.Duration, ev.HasDuration = time.Duration(e.rt-run.Start)*time.Microsecond, true
		}
		if ev.Host == "" {
			ev.Host = run.Host
		}
		delete(r.open, id)
	}
	r.batch.Events = append(r.batch.Events, ev)
	r.pos.Ended = append(r.pos.Ended, endedRun{ID: id, End: e.rt})
	if r.endedIdx != nil {
		r.endedIdx[id] = len(r.pos.Ended) - 1
	}
	// Trim in steps, not on every run: the position keeps between
	// maxEnded and 5/4 of it.
	if over := len(r.pos.Ended) - r.j.maxEnded; over > r.j.maxEnded/4 {
		for _, x := range r.pos.Ended[:over] {
			r.pos.Floor = max(r.pos.Floor, x.End)
		}
		r.pos.Ended = append([]endedRun(nil), r.pos.Ended[over:]...)
		r.endedIdx = nil // rebuilt on next use
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// last returns the last non-empty line written.
func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
