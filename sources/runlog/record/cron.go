package record

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/model"
)

// Command maps the commands cron runs to a job: the first whose Match (a
// regular expression on the command, as cron logs it) matches names the
// job.
type Command struct {
	Match string `yaml:"match"`
	Job   string `yaml:"job"`
}

// Debian cron's -L bits (cron(8)): what it logs about jobs.
const (
	CronLogStart  = 1 // CMD lines
	CronLogEnd    = 2 // END lines
	CronLogFailed = 4 // "(CRON) error (grandchild #N failed with exit status S)"
	CronLogPID    = 8 // the job's pid in CMD and END lines: "CMD ([N] command)"
	// DefaultCronLogLevel is what Debian's cron logs without -L, and all
	// cronie ever logs about a job: its start.
	DefaultCronLogLevel = CronLogStart
)

// Bounds of the cron parser's state: runs started and not yet ended, and
// failures waiting for their END line. A full table is cleared (those runs
// then end unmatched, or are closed as lost by the model).
const maxCronRuns = 4096

// Cron parses cron's own syslog lines, as rsyslog writes them to a file
// (/var/log/syslog, /var/log/cron.log, cronie's /var/log/cron), in the
// traditional format ("Dec  1 09:53:56 host CRON[20504]: ...") or
// rsyslog's RFC 3339 one ("2026-12-01T09:53:56.735176+00:00 host ...").
//
// Debian's cron logs a job's start (CMD), its end (END) and its failure
// (an error line naming the job's pid but not its command), each in a line
// of its own, according to -L; cronie logs only CMD. The lines of one run
// are linked by pid: the error and END lines carry the pid of the cron
// child that ran the job, the error line and (with -L 8) the CMD and END
// lines the job's own pid. A run's error line ends it as failed; its END
// line that follows is not a second run.
//
// Commands map to jobs: a command run through `jobwatch run --job NAME`
// maps itself, others by the first of the commands that matches; a command
// that matches none is an event of no job, which the model counts as an
// unknown job's.
type Cron struct {
	loc      *time.Location
	now      func() time.Time
	commands []cronCommand
	// open: runs started, by host and the job's pid.
	open map[cronKey]cronRun
	// failed: error lines whose run was not known (started before the log
	// was read), by host and the cron child's pid, waiting for the END line
	// that names the command. ended: cron children whose run an error line
	// ended, whose END line is then dropped.
	failed map[cronKey]cronFailure
	ended  map[cronKey]bool
	intern interner
}

// cronKey is a process of a host: a log gathered from many hosts has the
// same pids on several.
type cronKey struct {
	host string
	pid  int
}

type cronCommand struct {
	re  *regexp.Regexp
	job string
}

type cronRun struct {
	job, cmd string
	start    time.Time
}

type cronFailure struct {
	jobPID, status int
}

// NewCron returns a parser of cron's syslog lines. loc is the zone of
// timestamps without an offset (nil: UTC); now gives the year of
// timestamps without one (nil: time.Now).
func NewCron(commands []Command, loc *time.Location, now func() time.Time) (*Cron, error) {
	if loc == nil {
		loc = time.UTC
	}
	if now == nil {
		now = time.Now
	}
	c := &Cron{loc: loc, now: now, open: map[cronKey]cronRun{}, failed: map[cronKey]cronFailure{}, ended: map[cronKey]bool{},
		intern: interner{max: maxIntern}}
	for i, m := range commands {
		re, err := regexp.Compile(m.Match)
		if err != nil {
			return nil, fmt.Errorf("record: commands[%d].match: %w", i, err)
		}
		if !validJob([]byte(m.Job)) {
			return nil, fmt.Errorf("record: commands[%d].job: invalid job name %q", i, m.Job)
		}
		c.commands = append(c.commands, cronCommand{re, m.Job})
	}
	return c, nil
}

// SetNow replaces the clock that gives timestamps without a year theirs.
func (c *Cron) SetNow(now func() time.Time) {
	if now != nil {
		c.now = now
	}
}

// Parse implements Parser. Lines of other programs, and cron's lines that
// are not about a job's start or end, are ErrNoMatch.
func (c *Cron) Parse(line []byte, ev *model.Event) error {
	*ev = model.Event{}
	if len(bytes.TrimSpace(line)) == 0 {
		return ErrEmpty
	}
	ts, host, tag, pid, msg, ok := c.header(line)
	if !ok || !isCronTag(tag) {
		return ErrNoMatch
	}
	user, kind, detail, ok := cronMessage(msg)
	if !ok {
		return ErrNoMatch
	}
	if len(host) > MaxHostLen || !printable(host) || !utf8.Valid(host) {
		return fmt.Errorf("host: not a host name of at most %d bytes", MaxHostLen)
	}
	ev.Time = ts.UTC()
	ev.Host = c.intern.get(host)
	switch {
	case kind == "CMD":
		c.cmdLine(ev, pid, detail)
		return nil
	case kind == "END":
		return c.endLine(ev, pid, detail)
	case user == "CRON" && kind == "error":
		return c.errorLine(ev, pid, detail)
	}
	return ErrNoMatch
}

// cmdLine reads the CMD line of a run's start, logged by cron's child pid.
func (c *Cron) cmdLine(ev *model.Event, pid int, detail []byte) {
	jobPID, cmd := splitJobPID(detail)
	if jobPID == 0 {
		jobPID = pid // without -L 8 the job itself logs its CMD line
	}
	job := c.jobOf(cmd)
	ev.Kind, ev.Job, ev.PID = model.Start, job, jobPID
	if job != "" {
		c.remember(cronKey{ev.Host, jobPID}, cronRun{job: job, cmd: string(cmd), start: ev.Time})
	}
}

// endLine reads the END line of a run, logged by cron's child pid.
func (c *Cron) endLine(ev *model.Event, pid int, detail []byte) error {
	child := cronKey{ev.Host, pid}
	if c.ended[child] {
		delete(c.ended, child)
		return ErrNoMatch // the error line before it ended the run
	}
	jobPID, cmd := splitJobPID(detail)
	ev.Kind, ev.Result, ev.Job = model.End, model.Success, c.jobOf(cmd)
	if f, ok := c.failed[child]; ok {
		delete(c.failed, child)
		ev.Result, ev.ExitCode, ev.HasExitCode = model.Failure, f.status, true
		if jobPID == 0 {
			jobPID = f.jobPID
		}
	}
	if jobPID == 0 {
		jobPID = c.oldestOpen(ev.Host, ev.Job, cmd)
	}
	ev.PID = jobPID
	delete(c.open, cronKey{ev.Host, jobPID})
	return nil
}

// errorLine reads the error line of a failed run, logged by cron's child
// pid.
func (c *Cron) errorLine(ev *model.Event, pid int, detail []byte) error {
	jobPID, status, ok := grandchildFailed(detail)
	if !ok {
		return ErrNoMatch
	}
	child := cronKey{ev.Host, pid}
	k := cronKey{ev.Host, jobPID}
	r, known := c.open[k]
	if !known {
		if len(c.failed) >= maxCronRuns {
			clear(c.failed)
		}
		c.failed[child] = cronFailure{jobPID, status}
		return ErrNoMatch // the END line names its command
	}
	delete(c.open, k)
	if len(c.ended) >= maxCronRuns {
		clear(c.ended)
	}
	c.ended[child] = true
	ev.Kind, ev.Job, ev.PID = model.End, r.job, jobPID
	ev.Result, ev.ExitCode, ev.HasExitCode = model.Failure, status, true
	return nil
}

func (c *Cron) remember(k cronKey, r cronRun) {
	if len(c.open) >= maxCronRuns {
		clear(c.open)
	}
	c.open[k] = r
}

// oldestOpen is the pid of the oldest run in progress of job with command
// cmd: without -L 8 an END line names the cron child, not the job.
func (c *Cron) oldestOpen(host, job string, cmd []byte) int {
	best := 0
	var at time.Time
	for k, r := range c.open {
		if k.host != host || r.job != job || r.cmd != string(cmd) {
			continue
		}
		if best == 0 || r.start.Before(at) || (r.start.Equal(at) && k.pid < best) {
			best, at = k.pid, r.start
		}
	}
	return best
}

// jobOf maps a command to its job, or "" when nothing maps it.
func (c *Cron) jobOf(cmd []byte) string {
	if job := jobwatchRunJob(cmd); job != "" {
		return c.intern.get([]byte(job))
	}
	for _, m := range c.commands {
		if m.re.Match(cmd) {
			return m.job
		}
	}
	return ""
}

// jobwatchRunJob returns NAME when cmd runs `jobwatch run ... --job NAME`
// (or --job=NAME) before its "--".
func jobwatchRunJob(cmd []byte) string {
	if !bytes.Contains(cmd, []byte("jobwatch")) {
		return ""
	}
	f := strings.Fields(string(cmd))
	for i := 0; i+1 < len(f); i++ {
		if filepath.Base(f[i]) != "jobwatch" || f[i+1] != "run" {
			continue
		}
		for j := i + 2; j < len(f) && f[j] != "--"; j++ {
			var name string
			switch {
			case f[j] == "--job" && j+1 < len(f):
				name = f[j+1]
			case strings.HasPrefix(f[j], "--job="):
				name = f[j][len("--job="):]
			default:
				continue
			}
			name = strings.Trim(name, `'"`)
			if validJob([]byte(name)) {
				return name
			}
			return ""
		}
	}
	return ""
}

// header splits a syslog line as rsyslog writes it to a file: timestamp,
// host, tag[pid]: message.
func (c *Cron) header(line []byte) (ts time.Time, host, tag []byte, pid int, msg []byte, ok bool) {
	rest := line
	if len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			return
		}
		t, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
		if err != nil || t.Year() < 1970 {
			return
		}
		ts, rest = t, rest[i+1:]
	} else {
		// "Dec  1 09:53:56": no year, no zone.
		const layout = "Jan _2 15:04:05"
		if len(rest) < len(layout)+1 || rest[len(layout)] != ' ' {
			return
		}
		t, err := time.ParseInLocation(layout, string(rest[:len(layout)]), c.loc)
		if err != nil {
			return
		}
		ts, rest = c.withYear(t), rest[len(layout)+1:]
	}
	i := bytes.IndexByte(rest, ' ')
	if i <= 0 {
		return
	}
	host, rest = rest[:i], rest[i+1:]
	i = bytes.Index(rest, []byte(": "))
	if i <= 0 {
		return
	}
	tag, msg = rest[:i], rest[i+2:]
	open := bytes.IndexByte(tag, '[')
	if open <= 0 || tag[len(tag)-1] != ']' {
		return
	}
	n, err := strconv.Atoi(string(tag[open+1 : len(tag)-1]))
	if err != nil || n <= 0 || n > 1<<22 {
		return
	}
	return ts, host, tag[:open], n, msg, true
}

// withYear gives a timestamp without a year the year that puts it nearest
// before now: a log read on the 1st of January still has December's lines
// of the year before. A day of clock skew ahead is allowed.
func (c *Cron) withYear(t time.Time) time.Time {
	now := c.now().In(c.loc)
	y := now.Year()
	d := time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, c.loc)
	if d.After(now.Add(24 * time.Hour)) {
		d = time.Date(y-1, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, c.loc)
	}
	return d
}

// isCronTag: Debian's cron logs as "cron" (the daemon) and "CRON" (the
// child running a job), cronie as "crond" and "CROND".
func isCronTag(tag []byte) bool {
	switch string(tag) {
	case "CRON", "CROND", "cron", "crond":
		return true
	}
	return false
}

// cronMessage splits "(user) KIND (detail)".
func cronMessage(msg []byte) (user, kind string, detail []byte, ok bool) {
	if len(msg) < 2 || msg[0] != '(' || msg[len(msg)-1] != ')' {
		return
	}
	i := bytes.Index(msg, []byte(") "))
	if i < 0 {
		return
	}
	u, rest := msg[1:i], msg[i+2:]
	j := bytes.Index(rest, []byte(" ("))
	if j <= 0 {
		return
	}
	k := rest[:j]
	switch string(k) {
	case "CMD", "END", "error":
	default:
		return
	}
	return string(u), string(k), rest[j+2 : len(rest)-1], true
}

// splitJobPID splits "[1234] command" (cron -L 8) into the job's pid and
// the command; without the pid it returns 0 and detail.
func splitJobPID(detail []byte) (int, []byte) {
	if len(detail) < 4 || detail[0] != '[' {
		return 0, detail
	}
	i := bytes.Index(detail, []byte("] "))
	if i < 2 {
		return 0, detail
	}
	n, err := strconv.Atoi(string(detail[1:i]))
	if err != nil || n <= 0 || n > 1<<22 {
		return 0, detail
	}
	return n, detail[i+2:]
}

// grandchildFailed reads "grandchild #1234 failed with exit status 3".
func grandchildFailed(detail []byte) (jobPID, status int, ok bool) {
	const pre, mid = "grandchild #", " failed with exit status "
	if !bytes.HasPrefix(detail, []byte(pre)) {
		return
	}
	rest := detail[len(pre):]
	i := bytes.Index(rest, []byte(mid))
	if i <= 0 {
		return
	}
	p, err1 := strconv.Atoi(string(rest[:i]))
	s, err2 := strconv.Atoi(string(rest[i+len(mid):]))
	if err1 != nil || err2 != nil || p <= 0 || p > 1<<22 || s < 0 || s > 255 {
		return
	}
	return p, s, true
}
