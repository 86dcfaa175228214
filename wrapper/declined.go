package wrapper

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync/atomic"

	"github.com/jobwatch/jobwatch/model"
)

// A run that declined to run: the command started, found that it should
// not (its own lock held, GET_LOCK returning 0) and returned. --skipped-exit
// and --skipped-output tell such a run from one that succeeded; it is
// recorded as skipped, as the wrapper's own skips are, so that last success
// does not move.

// ExitTempFail is EX_TEMPFAIL (sysexits.h), the exit code the docs
// suggest for "declined to run, try later".
const ExitTempFail = 75

// MaxMatchedLine bounds the line --skipped-output matches: a longer line is
// passed through whole and not matched, so that the wrapper's memory stays
// bounded whatever the command prints.
const MaxMatchedLine = 64 << 10

// checkSkipped checks the options of a run that declined to run and
// compiles --skipped-output.
func (r *runner) checkSkipped() error {
	o := r.o
	for _, c := range o.SkippedExit {
		if c < 0 || c > 255 {
			return fmt.Errorf("--skipped-exit must be 0-255, got %d", c)
		}
	}
	if o.SkippedReason != "" && !slices.Contains(model.SkipReasons, o.SkippedReason) {
		return fmt.Errorf("--skipped-reason must be one of %v, got %q", model.SkipReasons, o.SkippedReason)
	}
	if o.SkippedOutput == "" {
		return nil
	}
	re, err := regexp.Compile(o.SkippedOutput)
	if err != nil {
		return fmt.Errorf("--skipped-output: %w", err)
	}
	r.output = &outputWatch{re: re}
	return nil
}

// skippedReason is the reason a run that declined to run is recorded with.
func (r *runner) skippedReason() string {
	if r.o.SkippedReason != "" {
		return r.o.SkippedReason
	}
	return model.SkipOther
}

// declined reports whether the job, which exited with code, declined to
// run: an exit code of --skipped-exit, or a line of --skipped-output.
func (r *runner) declined(code int) bool {
	return slices.Contains(r.o.SkippedExit, code) || r.output != nil && r.output.seen()
}

// outputWatch watches the command's stdout and stderr for a line that
// matches --skipped-output, passing everything through.
type outputWatch struct {
	re      *regexp.Regexp
	matched atomic.Bool // by the stdout or the stderr copier
	out     [2]*lineMatcher
}

// writers are the command's stdout and stderr: w's writers passed through
// line matchers. Not *os.File: exec copies each stream through its own
// goroutine, a chunk at a time as it arrives, and Wait waits for them
// (WaitDelay bounds it when a child the command left holds the pipe).
func (w *outputWatch) writers(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	w.out = [2]*lineMatcher{{w: stdout, watch: w}, {w: stderr, watch: w}}
	return w.out[0], w.out[1]
}

// seen reports whether a line matched; called once the command's output
// has been copied (after Wait), it also takes the last line of each stream
// when it has no newline.
func (w *outputWatch) seen() bool {
	for _, m := range w.out {
		if m != nil {
			m.endLine()
		}
	}
	return w.matched.Load()
}

// lineMatcher passes one stream through to w and matches its complete
// lines, each up to MaxMatchedLine bytes, against the watch's pattern.
type lineMatcher struct {
	w     io.Writer
	watch *outputWatch
	line  []byte // the current line so far, at most MaxMatchedLine bytes
	long  bool   // the current line is longer: not matched
}

// Write writes p through first, then matches the lines it completes. A
// failed write is returned as it is (the command then sees its output
// closed, as it would without the wrapper), after p has been matched.
func (m *lineMatcher) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	if m.watch.matched.Load() {
		return n, err // one line is enough: the rest is only passed through
	}
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			m.add(rest)
			break
		}
		m.add(rest[:i])
		m.endLine()
		rest = rest[i+1:]
	}
	return n, err
}

// add adds b to the current line, unless that makes it too long to match.
func (m *lineMatcher) add(b []byte) {
	switch {
	case m.long:
	case len(m.line)+len(b) > MaxMatchedLine:
		m.long, m.line = true, m.line[:0]
	default:
		m.line = append(m.line, b...)
	}
}

// endLine matches the current line (without a trailing \r; an empty line
// is not matched) and starts the next.
func (m *lineMatcher) endLine() {
	if !m.long && len(m.line) > 0 && m.watch.re.Match(bytes.TrimSuffix(m.line, []byte("\r"))) {
		m.watch.matched.Store(true)
	}
	m.line, m.long = m.line[:0], false
}
