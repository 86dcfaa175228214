package journal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/sources"
)

// A journalctl that prints nothing looks like a journal in which nothing
// happens: under a sandbox that hides the boot ID it filters on (see
// args), or with a journal it cannot read, the source stays up and every
// timer's run would be counted missed. The service manager knows better:
// each unit's timer's LastTriggerUSec, and the service's
// InactiveExitTimestamp when that trigger started a run. A run the service
// manager started that the journal has not shown within silenceAfter is a
// health problem of the source (down, with why: the model then counts no
// missed run from the clock for its jobs), not a missed run.

// silenceWatch is what the silence check shares between the reader, which
// notes the starts it reads, and the watcher, which asks systemctl.
type silenceWatch struct {
	mu sync.Mutex
	// started: the latest start entry read of each unit (µs).
	started map[string]int64
	// triggers: each unit's timer's LastTriggerUSec as last seen (µs);
	// expect: runs the service manager started after a trigger moved, not
	// shown yet (µs), by unit.
	triggers map[string]int64
	expect   map[string]int64
}

func newSilenceWatch() *silenceWatch {
	return &silenceWatch{started: map[string]int64{}, triggers: map[string]int64{}, expect: map[string]int64{}}
}

// sawStart notes a start entry of unit read at rt (µs).
func (w *silenceWatch) sawStart(unit string, rt int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rt > w.started[unit] {
		w.started[unit] = rt
	}
}

// unitTimes is what systemctl says of a unit's last run: when its timer
// last fired and when it last left the inactive state (µs; 0: never).
type unitTimes struct {
	triggered, began int64
}

// judge takes what systemctl says of each unit now and returns the error
// that makes the source silent, or nil. A trigger that moved and started
// a run (the service left inactive at or after it) is expected in the
// journal; the first look at a unit only takes its trigger as known.
func (w *silenceWatch) judge(units map[string]unitTimes, now time.Time, after time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for unit, u := range units {
		prev, known := w.triggers[unit]
		w.triggers[unit] = u.triggered
		if known && u.triggered > prev && u.began >= u.triggered-slackUS {
			w.expect[unit] = u.began
		}
	}
	var silent []string
	oldest := int64(0)
	for unit, began := range w.expect {
		if w.started[unit] >= began-slackUS {
			delete(w.expect, unit)
			continue
		}
		if now.Sub(time.UnixMicro(began)) >= after {
			silent = append(silent, unit)
			if oldest == 0 || began < oldest {
				oldest = began
			}
		}
	}
	if len(silent) == 0 {
		return nil
	}
	sort.Strings(silent)
	return fmt.Errorf("journalctl has shown no start of %s, which the service manager started at %s: the source reads nothing of the journal (a sandbox hiding it, or a journal jobwatch cannot read; see docs/journal.md)",
		strings.Join(silent, ", "), time.UnixMicro(oldest).UTC().Format(time.RFC3339))
}

// slackUS: a start entry may be stamped a little before the time systemctl
// gives the unit's state change (µs).
const slackUS = int64(2 * time.Second / time.Microsecond)

// watchSilence asks systemctl every silenceEvery what the units' timers
// and services did, and reports the source silent (health) while a run
// they started has not been read. It returns when ctx is done. Reading a
// directory or files (another machine's journals), or with no units, it
// does nothing; nor while systemctl cannot answer (no service manager
// here), which it logs once.
func (j *Source) watchSilence(ctx context.Context, w *silenceWatch, h *sharedHealth) {
	if !j.askSystemd || len(j.units) == 0 || j.silenceEvery <= 0 {
		return
	}
	units := make([]string, 0, len(j.units))
	for u := range j.units {
		units = append(units, u)
	}
	sort.Strings(units)
	failed := false
	for j.sleep(ctx, j.silenceEvery) {
		times, err := j.unitTimes(ctx, units)
		if err != nil {
			if !failed {
				j.log.Info("cannot ask systemctl when the timers fired: a journal that shows nothing is not noticed", "err", err)
				failed = true
			}
			continue
		}
		failed = false
		h.setSilence(w.judge(times, j.now(), j.silenceAfter))
	}
}

// unitTimes asks systemctl for each service's timer's LastTriggerUSec and
// the service's InactiveExitTimestamp.
func (j *Source) unitTimes(ctx context.Context, services []string) (map[string]unitTimes, error) {
	svc, err := j.systemctlShow(ctx, []string{"Id", "TriggeredBy", "InactiveExitTimestamp"}, services)
	if err != nil {
		return nil, err
	}
	timerOf := map[string]string{}
	var timers []string
	for _, s := range services {
		for _, t := range strings.Fields(svc[s]["TriggeredBy"]) {
			if strings.HasSuffix(t, ".timer") {
				timerOf[s] = t
				timers = append(timers, t)
				break
			}
		}
	}
	out := map[string]unitTimes{}
	if len(timers) == 0 {
		return out, nil
	}
	tim, err := j.systemctlShow(ctx, []string{"Id", "LastTriggerUSec"}, timers)
	if err != nil {
		return nil, err
	}
	for s, t := range timerOf {
		out[s] = unitTimes{triggered: unixTimestamp(tim[t]["LastTriggerUSec"]), began: unixTimestamp(svc[s]["InactiveExitTimestamp"])}
	}
	return out, nil
}

// systemctlShow runs systemctl show for units and returns each unit's
// properties, by its Id.
func (j *Source) systemctlShow(ctx context.Context, props, units []string) (map[string]map[string]string, error) {
	args := []string{"show", "--timestamp=unix"}
	for _, p := range props {
		args = append(args, "--property="+p)
	}
	args = append(args, "--")
	cctx, cancel := context.WithTimeout(ctx, systemctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, j.systemctl, append(args, units...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("systemctl show: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseShow(out), nil
}

// systemctlTimeout bounds one systemctl show, for a systemctl that hangs.
// It is above systemctl's own bound on a call to the service manager (25 s,
// after which it fails saying so) so as not to kill one that is only slow:
// on a host loaded with I/O, starting systemctl alone took over 10 s. A
// look that takes long only delays the next one.
const systemctlTimeout = time.Minute

// parseShow reads systemctl show's blocks of NAME=value lines, one block
// per unit, blank lines between them, keyed by Id.
func parseShow(out []byte) map[string]map[string]string {
	res := map[string]map[string]string{}
	cur := map[string]string{}
	flush := func() {
		if id := cur["Id"]; id != "" {
			res[id] = cur
		}
		cur = map[string]string{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			cur[k] = v
		}
	}
	flush()
	return res
}

// unixTimestamp reads a timestamp as systemctl --timestamp=unix prints it
// ("@1733472000"), in µs; 0 for none ("", "n/a").
func unixTimestamp(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "@"), 10, 64)
	if err != nil || !strings.HasPrefix(s, "@") || n <= 0 {
		return 0
	}
	return n * 1e6
}

// sharedHealth is the source's health, reported from two goroutines:
// the reader's (can the journal be read) and the silence watcher's (does
// it show what the service manager did). Down for either reason is down.
type sharedHealth struct {
	mu      sync.Mutex
	h       *sources.Health
	known   bool // the reader has reported
	readErr error
	silence error
}

func (s *sharedHealth) setRead(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known, s.readErr = true, err
	s.report()
}

func (s *sharedHealth) setSilence(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silence = err
	if s.known {
		s.report()
	}
}

func (s *sharedHealth) report() {
	switch {
	case s.readErr != nil:
		s.h.Down("", s.readErr)
	case s.silence != nil:
		s.h.Down("silent", s.silence)
	default:
		s.h.Up()
	}
}
