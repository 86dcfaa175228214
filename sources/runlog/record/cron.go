package record

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/internal/cronlog"
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
	CronLogStart  = cronlog.LogStart  // CMD lines
	CronLogEnd    = cronlog.LogEnd    // END lines
	CronLogFailed = cronlog.LogFailed // "(CRON) error (grandchild #N failed with exit status S)"
	CronLogPID    = cronlog.LogPID    // the job's pid in CMD and END lines: "CMD ([N] command)"
	// DefaultCronLogLevel is what Debian's cron logs without -L, and all
	// cronie ever logs about a job: its start.
	DefaultCronLogLevel = cronlog.DefaultLevel
)

// Cron parses cron's own syslog lines, as rsyslog writes them to a file
// (/var/log/syslog, /var/log/cron.log, cronie's /var/log/cron), in the
// traditional format ("Dec  1 09:53:56 host CRON[20504]: ...") or
// rsyslog's RFC 3339 one ("2026-12-01T09:53:56.735176+00:00 host ...").
//
// The lines of one run are linked by internal/cronlog, the matcher the
// journal source's cron lines go through too (its doc says which process
// logs which line at each -L). Commands map to jobs: a command run through
// `jobwatch run --job NAME` maps itself, others by the first of the
// commands that matches; a command that matches none is an event of no
// job, which the model counts as an unknown job's.
type Cron struct {
	loc    *time.Location
	now    func() time.Time
	rules  []cronlog.Rule
	match  *cronlog.Matcher
	intern interner
}

// NewCron returns a parser of cron's syslog lines. loc is the zone of
// timestamps without an offset (nil: UTC); now gives the year of
// timestamps without one (nil: time.Now). Its cron's level is not known
// (see SetLevel).
func NewCron(commands []Command, loc *time.Location, now func() time.Time) (*Cron, error) {
	if loc == nil {
		loc = time.UTC
	}
	if now == nil {
		now = time.Now
	}
	c := &Cron{loc: loc, now: now, intern: interner{max: maxIntern}}
	for i, m := range commands {
		re, err := regexp.Compile(m.Match)
		if err != nil {
			return nil, fmt.Errorf("record: commands[%d].match: %w", i, err)
		}
		if !validJob([]byte(m.Job)) {
			return nil, fmt.Errorf("record: commands[%d].job: invalid job name %q", i, m.Job)
		}
		c.rules = append(c.rules, cronlog.Rule{Re: re, Job: m.Job})
	}
	c.match = cronlog.New(c.rules, cronlog.Detect)
	return c, nil
}

// SetLevel says at which -L the cron whose lines are read logs
// (cron_log_level): which results its END lines can give, and whether a
// run's end is logged at all (cronlog.Matcher).
func (c *Cron) SetLevel(level int) { c.match = cronlog.New(c.rules, level) }

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
	if !ok || !cronlog.IsTag(tag) {
		return ErrNoMatch
	}
	if len(host) > MaxHostLen || !printable(host) || !utf8.Valid(host) {
		return fmt.Errorf("host: not a host name of at most %d bytes", MaxHostLen)
	}
	h := c.intern.get(host)
	r, ok := c.match.Match(h, tag, pid, msg)
	if !ok {
		return ErrNoMatch
	}
	CronEvent(r, ev)
	ev.Time, ev.Host = ts.UTC(), h
	return nil
}

// CronEvent fills ev's kind, job, PID and result from what a cron line says
// of its run.
func CronEvent(r cronlog.Run, ev *model.Event) {
	ev.Job, ev.PID = r.Job, r.PID
	if r.Kind == cronlog.Start {
		ev.Kind, ev.EndUnlogged = model.Start, r.EndUnlogged
		return
	}
	ev.Kind, ev.Result, ev.ExitCode, ev.HasExitCode = model.End, model.Result(r.Result), r.ExitCode, r.HasExitCode
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
