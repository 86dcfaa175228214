// Running journalctl: where the journal is, the command line, starting and
// following the process, its output cut into lines and its errors. What
// the lines mean is runs.go's.

package journal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

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
