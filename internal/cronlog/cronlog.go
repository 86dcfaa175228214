// Package cronlog reads the lines the cron daemon logs about the jobs it
// runs, whichever way they reach jobwatch (a syslog file read by a runlog
// source with format cron, or the journal): one matcher links the lines of
// one run, at every log level of Debian's cron (-L) and cronie's.
//
// What Debian's cron (3.0pl1, do_command.c) logs, by -L bit, and which
// process logs it (the syslog PID):
//
//	1  "(user) CMD (command)": the job's own process, before it execs the
//	   command (so the syslog PID is the job's); with bit 8 the cron child
//	   logs it instead, after the fork: "(user) CMD ([jobpid] command)".
//	2  "(user) END (command)": the cron child, once the job has exited
//	   (with bit 8: "(user) END ([jobpid] command)").
//	4  "(CRON) error (grandchild #jobpid failed with exit status S)": the
//	   cron child, before its END line, when the job exited non-zero.
//	8  the job's PID inside the CMD and END lines.
//
// Debian's default (no -L) is 1: a run's start is all cron says, neither
// its end nor its result. The daemon itself (tag "cron") logs "(CRON) INFO
// (pidfile fd = N)" when it starts. cronie logs only CMD lines (tag
// CROND, the job's PID).
//
// package cronlog imports nothing of jobwatch's model: the readers turn a
// Run into their events.
package cronlog

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jobwatch/jobwatch/internal/jobname"
)

// Debian cron's -L bits (cron(8)).
const (
	LogStart  = 1 // CMD lines
	LogEnd    = 2 // END lines
	LogFailed = 4 // "(CRON) error (grandchild #N failed with exit status S)"
	LogPID    = 8 // the job's PID in CMD and END lines
	// DefaultLevel is what Debian's cron logs without -L (and all cronie
	// ever logs about a job): its start.
	DefaultLevel = LogStart
	// Detect is a Matcher's level when none is configured: ends are
	// taken to be logged once the cron daemon has logged one (see Matcher).
	Detect = -1
)

// MaxJobLen bounds a job name taken from a `jobwatch run --job NAME`
// command.
const MaxJobLen = 128

// MaxRuns bounds the matcher's tables: runs started and not yet ended,
// failures waiting for their END line, hosts. A full table is cleared
// (those runs then end unmatched, or as the model closes them).
const MaxRuns = 4096

// maxPID is the largest PID Linux gives (PID_MAX_LIMIT, 2^22).
const maxPID = 1 << 22

// Rule maps the commands that Re matches (as cron logs them) to Job.
type Rule struct {
	Re  *regexp.Regexp
	Job string
}

// Kind is what a line says of a run.
type Kind uint8

const (
	Start Kind = iota + 1
	End
)

// Result is how a run ended, as far as cron logged it: the same words as
// the result label of jobwatch_job_runs_total (model.Result).
type Result string

const (
	Success Result = "success"
	Failure Result = "failure"
	// Unknown: cron logged the run's end and not whether it failed (its
	// -L lacks 4).
	Unknown Result = "unknown"
)

// Run is what one line says about a run.
type Run struct {
	Kind Kind
	Job  string // "" for a command no rule maps
	// PID is the job's process (0: not known, as for an END line of a run
	// whose start was not read, without -L 8).
	PID int
	// End only.
	Result      Result
	ExitCode    int
	HasExitCode bool
	// EndUnlogged (Start only): cron will not log this run's end (its -L
	// lacks 2, or, its level not configured, the daemon has logged no end
	// since it started): when its process is gone its result is unknown,
	// it is not lost.
	EndUnlogged bool
}

// Matcher links cron's lines of one run, whichever process logged them.
// It is not safe for concurrent use.
type Matcher struct {
	rules []Rule
	level int
	// open: runs started, by host and the job's PID.
	open map[key]openRun
	seq  uint64
	// failed: error lines whose run was not known (started before the log
	// was read), by host and the cron child's PID, waiting for the END line
	// that names the command. ended: cron children whose run an error line
	// ended, whose END line is then dropped.
	failed map[key]failure
	ended  map[key]bool
	// endsSeen: hosts whose cron daemon has logged an END or error line
	// since it last started.
	endsSeen map[string]bool
	jobs     map[string]string // job names from jobwatch run, each kept once
}

// key is a process of a host: a log gathered from many hosts has the same
// PIDs on several.
type key struct {
	host string
	pid  int
}

// openRun is a run in progress: its job, its command's CmdHash (the
// command itself, which may hold a password, is kept nowhere), and the
// order it started in.
type openRun struct {
	job string
	cmd uint64
	seq uint64
}

type failure struct {
	jobPID, status int
}

// New returns a matcher of the rules for a cron logging at level (its
// -L), or Detect when the level is not known.
func New(rules []Rule, level int) *Matcher {
	return &Matcher{rules: rules, level: level, open: map[key]openRun{}, failed: map[key]failure{},
		ended: map[key]bool{}, endsSeen: map[string]bool{}, jobs: map[string]string{}}
}

// StateSize is how many entries the matcher's tables hold: runs in
// progress, failures waiting for their END line, children whose END line
// is to be dropped, hosts. Each is at most MaxRuns.
func (m *Matcher) StateSize() (open, failed, ended, hosts int) {
	return len(m.open), len(m.failed), len(m.ended), len(m.endsSeen)
}

// Level is the configured level, or Detect.
func (m *Matcher) Level() int { return m.level }

// IsTag reports whether a syslog tag is cron's: Debian's cron logs as
// "cron" (the daemon) and "CRON" (the child running a job), cronie as
// "crond" and "CROND".
func IsTag(tag []byte) bool {
	switch string(tag) {
	case "CRON", "CROND", "cron", "crond":
		return true
	}
	return false
}

// Match reads one line cron logged on host, with syslog tag and PID, its
// message msg. ok is false for a line about no run (another program's,
// the daemon's own, an END line an error line already ended).
func (m *Matcher) Match(host string, tag []byte, pid int, msg []byte) (r Run, ok bool) {
	if !IsTag(tag) || pid <= 0 || pid > maxPID {
		return Run{}, false
	}
	if daemonStarted(tag, msg) {
		delete(m.endsSeen, host) // it may log at another level now
		return Run{}, false
	}
	user, kind, detail, ok := message(msg)
	if !ok {
		return Run{}, false
	}
	switch {
	case kind == "CMD":
		return m.cmdLine(host, pid, detail), true
	case kind == "END":
		return m.endLine(host, pid, detail)
	case user == "CRON" && kind == "error":
		return m.errorLine(host, pid, detail)
	}
	return Run{}, false
}

// daemonStarted reports whether the line is the one Debian's cron daemon
// logs as it starts.
func daemonStarted(tag, msg []byte) bool {
	return string(tag) == "cron" && bytes.HasPrefix(msg, []byte("(CRON) INFO (pidfile fd = "))
}

// cmdLine reads a run's CMD line.
func (m *Matcher) cmdLine(host string, pid int, detail []byte) Run {
	jobPID, cmd := splitJobPID(detail)
	if jobPID == 0 {
		jobPID = pid // without -L 8 the job itself logs its CMD line
	}
	job := m.jobOf(cmd)
	if job != "" {
		m.Restore(host, jobPID, job, CmdHash(cmd))
	}
	return Run{Kind: Start, Job: job, PID: jobPID, EndUnlogged: m.endUnlogged(host)}
}

// endUnlogged reports whether a run started now on host will have no END
// or error line.
func (m *Matcher) endUnlogged(host string) bool {
	if m.level >= 0 {
		return m.level&LogEnd == 0
	}
	return !m.endsSeen[host]
}

// endResult is the result of an END line with no error line before it:
// a success when cron logs failures (or its level is not known: as at
// -L 15, which the docs recommend), else unknown.
func (m *Matcher) endResult() Result {
	if m.level >= 0 && m.level&LogFailed == 0 {
		return Unknown
	}
	return Success
}

// sawEnd notes that host's cron logs ends.
func (m *Matcher) sawEnd(host string) {
	if !m.endsSeen[host] && len(m.endsSeen) >= MaxRuns {
		clear(m.endsSeen)
	}
	m.endsSeen[host] = true
}

// endLine reads a run's END line, logged by the cron child.
func (m *Matcher) endLine(host string, pid int, detail []byte) (Run, bool) {
	m.sawEnd(host)
	child := key{host, pid}
	if m.ended[child] {
		delete(m.ended, child)
		return Run{}, false // the error line before it ended the run
	}
	jobPID, cmd := splitJobPID(detail)
	r := Run{Kind: End, Job: m.jobOf(cmd), Result: m.endResult()}
	if f, ok := m.failed[child]; ok {
		delete(m.failed, child)
		r.Result, r.ExitCode, r.HasExitCode = Failure, f.status, true
		if jobPID == 0 {
			jobPID = f.jobPID
		}
	}
	if jobPID == 0 {
		jobPID = m.oldestOpen(host, r.Job, cmd)
	}
	r.PID = jobPID
	delete(m.open, key{host, jobPID})
	return r, true
}

// errorLine reads the error line of a failed run, logged by the cron
// child: it ends the run it names when that run's start was read, else
// it waits for the END line, which names the command.
func (m *Matcher) errorLine(host string, pid int, detail []byte) (Run, bool) {
	jobPID, status, ok := grandchildFailed(detail)
	if !ok {
		return Run{}, false
	}
	m.sawEnd(host)
	child := key{host, pid}
	k := key{host, jobPID}
	o, known := m.open[k]
	if !known {
		if len(m.failed) >= MaxRuns {
			clear(m.failed)
		}
		m.failed[child] = failure{jobPID, status}
		return Run{}, false
	}
	delete(m.open, k)
	if len(m.ended) >= MaxRuns {
		clear(m.ended)
	}
	m.ended[child] = true
	return Run{Kind: End, Job: o.job, PID: jobPID, Result: Failure, ExitCode: status, HasExitCode: true}, true
}

// Restore makes the run of job whose command has CmdHash cmd, started on
// host as process pid, one in progress: a reader that saved its runs in
// progress gives them back after a restart, so that their END lines (which
// name no PID without -L 8) find them.
func (m *Matcher) Restore(host string, pid int, job string, cmd uint64) {
	if len(m.open) >= MaxRuns {
		clear(m.open)
	}
	m.seq++
	m.open[key{host, pid}] = openRun{job: job, cmd: cmd, seq: m.seq}
}

// Command is the CmdHash of the command of the run in progress on host as
// process pid (0 when none is known), for a reader to save.
func (m *Matcher) Command(host string, pid int) uint64 { return m.open[key{host, pid}].cmd }

// CmdHash is a command's FNV-1a hash: what links an END line without a
// PID to its run, stable across restarts.
func CmdHash(cmd []byte) uint64 {
	h := fnv.New64a()
	h.Write(cmd)
	return h.Sum64()
}

// oldestOpen is the PID of the oldest run in progress of job with command
// cmd: without -L 8 an END line names the cron child, not the job.
func (m *Matcher) oldestOpen(host, job string, cmd []byte) int {
	best, hash := 0, CmdHash(cmd)
	var at uint64
	for k, o := range m.open {
		if k.host != host || o.job != job || o.cmd != hash {
			continue
		}
		if best == 0 || o.seq < at {
			best, at = k.pid, o.seq
		}
	}
	return best
}

// jobOf maps a command to its job, or "" when nothing maps it.
func (m *Matcher) jobOf(cmd []byte) string {
	if job := jobwatchRunJob(cmd); job != "" {
		if s, ok := m.jobs[job]; ok {
			return s
		}
		if len(m.jobs) >= MaxRuns {
			clear(m.jobs)
		}
		m.jobs[job] = job
		return job
	}
	for _, r := range m.rules {
		if r.Re.Match(cmd) {
			return r.Job
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
			if len(name) <= MaxJobLen && jobname.Valid(name) {
				return name
			}
			return ""
		}
	}
	return ""
}

// message splits "(user) KIND (detail)".
func message(msg []byte) (user, kind string, detail []byte, ok bool) {
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

// splitJobPID splits "[1234] command" (cron -L 8) into the job's PID and
// the command; without the PID it returns 0 and detail.
func splitJobPID(detail []byte) (int, []byte) {
	if len(detail) < 4 || detail[0] != '[' {
		return 0, detail
	}
	i := bytes.Index(detail, []byte("] "))
	if i < 2 {
		return 0, detail
	}
	n, err := strconv.Atoi(string(detail[1:i]))
	if err != nil || n <= 0 || n > maxPID {
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
	if err1 != nil || err2 != nil || p <= 0 || p > maxPID || s < 0 || s > 255 {
		return
	}
	return p, s, true
}

// LevelGaps says what jobwatch cannot know of cron jobs from the lines a
// cron logging at level writes, or "" when it knows everything: the text
// of check-config's and discover's warnings.
func LevelGaps(level int) string {
	end, failed := level&LogEnd != 0, level&LogFailed != 0
	switch {
	case level&LogStart == 0 && !end && !failed:
		return fmt.Sprintf("cron -L %d logs nothing about jobs: no run of them is seen", level)
	case !end && !failed:
		return fmt.Sprintf("cron -L %d logs only job starts (CMD): results are not logged, so each run ends with result unknown once its process is gone", level)
	case !end:
		return fmt.Sprintf("cron -L %d logs no END lines: a run that succeeds ends with result unknown once its process is gone", level)
	case !failed:
		return fmt.Sprintf("cron -L %d logs no failures: every run that ends has result unknown", level)
	case level&LogStart == 0:
		return fmt.Sprintf("cron -L %d logs no starts: runs are seen only as they end, with no duration", level)
	}
	return ""
}

// LevelFix is how to make cron log everything jobwatch reads.
const LevelFix = `set EXTRA_OPTS="-L 15" in /etc/default/cron (bookworm ships it commented out) and restart cron`

// DefaultsFile is Debian's file of cron's options: cron.service runs
// `cron -f $EXTRA_OPTS` with it as its EnvironmentFile.
const DefaultsFile = "/etc/default/cron"

// LevelOfDefaults reads the -L of the last EXTRA_OPTS assignment of
// DefaultsFile, as the shell and systemd take it: quotes removed, "-L N"
// or "-LN". ok is false when no assignment gives one (DefaultLevel holds).
func LevelOfDefaults(data []byte) (level int, ok bool) {
	level = DefaultLevel
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		v, found := strings.CutPrefix(line, "EXTRA_OPTS=")
		if !found {
			continue // comments (bookworm's "#EXTRA_OPTS=" among them) and other keys
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		level, ok = DefaultLevel, false
		f := strings.Fields(v)
		for i, a := range f {
			arg := ""
			switch {
			case a == "-L" && i+1 < len(f):
				arg = f[i+1]
			case strings.HasPrefix(a, "-L") && len(a) > 2:
				arg = a[2:]
			default:
				continue
			}
			if n, err := strconv.Atoi(arg); err == nil && n >= 0 && n <= 15 {
				level, ok = n, true
			}
		}
	}
	return level, ok
}
