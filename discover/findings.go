package discover

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// Severity of a finding: warnings make jobwatch discover exit 1.
type Severity string

// Severities.
const (
	Info    Severity = "info"
	Warning Severity = "warning"
)

// Kinds of findings: the values of the kind label the exporter will use, a
// closed set.
const (
	KindDuplicate       = "duplicate_command"
	KindFlockBlocking   = "flock_blocking"
	KindLockInTmp       = "lock_in_cleaned_dir"
	KindSharedLock      = "shared_lock"
	KindPersistentDense = "persistent_dense"
	KindAccuracy        = "accuracy_subsecond"
	KindNoTimeout       = "no_timeout"
	KindNoLock          = "no_lock"
	KindDST             = "dst"
	KindCronRejected    = "cron_rejected"
	KindUnreadable      = "unreadable"
	KindIgnoredFile     = "ignored_file"
	KindReboot          = "reboot"
	KindTZEnv           = "tz_env"
	KindTimerLeftOut    = "timer_left_out"
	KindNoOp            = "no_op_line"
	KindNotInPath       = "not_in_path"
	KindCronTZIgnored   = "cron_tz_ignored"
	KindNoSource        = "no_source"
)

// Kinds lists every kind, sorted, so that a metric can export zeros.
var Kinds = []string{KindAccuracy, KindCronLevel, KindCronRejected, KindCronTZIgnored, KindDST, KindDuplicate, KindFlockBlocking,
	KindIgnoredFile, KindLockInTmp, KindNoLock, KindNoOp, KindNoSource, KindNoTimeout, KindNotInPath, KindPersistentDense, KindReboot,
	KindSharedLock, KindTZEnv, KindTimerLeftOut, KindUnreadable}

// Finding is one problem, at file:line, with a one-line fix.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	Job      string   `json:"job,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix"`
}

func (f Finding) String() string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	job := ""
	if f.Job != "" {
		job = " (" + f.Job + ")"
	}
	return fmt.Sprintf("%s: %s: %s%s: %s; fix: %s", where, f.Severity, f.Kind, job, f.Message, f.Fix)
}

// WriteFindings prints findings one a line, as text or as JSON lines.
func WriteFindings(w io.Writer, fs []Finding, asJSON bool) error {
	for _, f := range fs {
		if asJSON {
			b, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// HasWarnings reports whether any finding is a warning.
func HasWarnings(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Warning {
			return true
		}
	}
	return false
}

// Options are the inputs of the checks that depend on time.
type Options struct {
	// Now starts the year in which DST changes are looked for; zero means
	// time.Now().
	Now time.Time
	// P99 are the jobs' observed run durations (see P99), by job name; a
	// cron job without a lock whose runs take longer than its period is
	// then said to overlap.
	P99 map[string]time.Duration
}

func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// Check returns the host's notes and the findings on its jobs, sorted by
// file and line.
func Check(h *Host, o Options) []Finding {
	out := append([]Finding(nil), h.Notes...)
	out = append(out, checkDuplicates(h.Jobs)...)
	out = append(out, checkLocks(h)...)
	out = append(out, checkCronLevel(h)...)
	for i := range h.Jobs {
		j := &h.Jobs[i]
		out = append(out, checkJob(j, o)...)
		if watchKind(h, j) == "" {
			fix := "wrap the command: jobwatch-run --job " + j.Name + " -- CMD"
			if j.Origin == "timer" {
				fix = "point Unit= at a service"
			}
			out = append(out, at(j, KindNoSource, Info, "no jobwatch source sees this job's runs: it would be reported stale", fix))
		}
	}
	sortFindings(out)
	return out
}

func at(j *Job, kind string, sev Severity, msg, fix string) Finding {
	return Finding{File: j.File, Line: j.Line, Kind: kind, Severity: sev, Job: j.Name, Message: msg, Fix: fix}
}

// checkDuplicates finds one command scheduled in two files: a cron line
// and a timer, or two crontabs.
func checkDuplicates(jobs []Job) []Finding {
	var out []Finding
	first := map[string]*Job{}
	for i := range jobs {
		j := &jobs[i]
		if j.Cmd.Core == "" {
			continue
		}
		f, ok := first[j.Cmd.Core]
		if !ok {
			first[j.Cmd.Core] = j
			continue
		}
		if f.File == j.File && f.Origin == j.Origin {
			continue // two times in one crontab: meant
		}
		fix := "remove one of the two"
		if f.Origin != j.Origin {
			fix = "comment out the cron line if the timer replaced it, or disable the timer"
		}
		out = append(out, at(j, KindDuplicate, Warning,
			fmt.Sprintf("runs the same command as %s (%s): it runs twice", f.Name, f.Where()), fix))
	}
	return out
}

func checkLocks(h *Host) []Finding {
	var out []Finding
	users := map[string][]*Job{}
	var order []string
	for i := range h.Jobs {
		j := &h.Jobs[i]
		l := h.canonicalLock(j.Cmd.Lock)
		if l == "" {
			continue
		}
		if _, ok := users[l]; !ok {
			order = append(order, l)
		}
		users[l] = append(users[l], j)
		if j.Cmd.LockBlocking {
			out = append(out, at(j, KindFlockBlocking, Warning,
				"flock without -n waits for the lock: runs queue up behind a slow one and fire together later",
				"use flock -n "+l+" (skip the run while another holds the lock), or jobwatch-run --lock"))
		}
		if d := cleanedDir(h, l); d != "" {
			out = append(out, at(j, KindLockInTmp, Warning,
				fmt.Sprintf("lock file %s is in %s, which is cleaned: a run holding a deleted lock does not stop the next one", l, d),
				"put the lock under /run/lock or /var/lock"))
		}
	}
	for _, l := range order {
		js := users[l]
		if len(js) < 2 {
			continue
		}
		for _, j := range js[1:] {
			out = append(out, at(j, KindSharedLock, Info,
				fmt.Sprintf("shares lock %s with %s (%s): one job's run makes the other skip", l, js[0].Name, js[0].Where()),
				"give each job its own lock file unless they must exclude each other"))
		}
	}
	return out
}

// canonicalLock names a lock file by the path it has on the host: /var/lock
// and /var/run are links to /run/lock and /run on most systems.
func (h *Host) canonicalLock(p string) string {
	if p == "" || !path.IsAbs(p) {
		return p
	}
	p = path.Clean(p)
	for _, d := range []string{"/var/lock", "/var/run"} {
		if strings.HasPrefix(p, d+"/") {
			if t := linkTarget(h.Root, d); t != "" {
				return path.Join(t, strings.TrimPrefix(p, d+"/"))
			}
		}
	}
	return p
}

// cleanedDir returns the cleaned directory that holds the lock path, or "".
func cleanedDir(h *Host, lock string) string {
	p := path.Clean(lock)
	for _, d := range append([]string{"/tmp", "/var/tmp"}, h.Tmpfiles...) {
		if strings.HasPrefix(p, d+"/") {
			return d
		}
	}
	return ""
}

func checkJob(j *Job, o Options) []Finding {
	var out []Finding
	if j.Percent {
		out = append(out, at(j, KindCronRejected, Warning,
			"an unescaped % ends the command: cron runs only the text before it and feeds the rest to stdin",
			`write \% for a literal percent sign (date +\%F)`))
	}
	if j.Timeout == 0 && j.CommandLine != "" {
		out = append(out, noTimeout(j))
	}
	if j.Origin == "cron" && j.Cmd.Lock == "" {
		out = append(out, noLock(j, o))
	}
	if j.Origin == "timer" {
		out = append(out, checkTimer(j, o)...)
	}
	out = append(out, checkDST(j, o.now())...)
	for i := range out {
		if vendor(out[i].File) && out[i].Severity == Warning {
			// The distribution's units: worth knowing, but fixed with
			// a drop-in, not a reason to fail.
			out[i].Severity = Info
			out[i].Fix = "a drop-in in /etc/systemd/system: " + out[i].Fix
		}
	}
	return out
}

// noTimeout is the finding of a job without a timeout.
func noTimeout(j *Job) Finding {
	fix := "wrap the command: timeout 1h CMD, or jobwatch-run --timeout 1h -- CMD"
	if j.Origin == "timer" {
		fix = "set RuntimeMaxSec= in " + j.Service
		if j.ServiceType == "oneshot" {
			fix = "set TimeoutStartSec= in " + j.Service + " (infinite for Type=oneshot)"
		}
	}
	sev := Warning
	if j.Cmd.RunParts != "" {
		// The distribution's own run-parts line: the limits belong
		// to the scripts it runs.
		sev = Info
		fix = "give the scripts in " + j.Cmd.RunParts + " their own timeouts"
	}
	return at(j, KindNoTimeout, sev, "no timeout: a hung run blocks or piles up forever", fix)
}

// noLock is the finding of a cron job without a lock, which says when the
// runs seen already overlap.
func noLock(j *Job, o Options) Finding {
	msg := "no lock: a run that outlasts the period overlaps the next one"
	p99, ok := o.P99[j.Name]
	if !ok && j.Cmd.RunJob != "" {
		p99, ok = o.P99[j.Cmd.RunJob]
	}
	if period, known := cronPeriod(j.Schedule); ok && known && p99 > period {
		msg = fmt.Sprintf("no lock, and its runs take up to %s (P99 of the runs jobwatch saw) while it is scheduled every %s: runs overlap", fmtDuration(p99), fmtDuration(period))
	}
	return at(j, KindNoLock, Info, msg,
		"wrap the command: flock -n /run/lock/"+j.Name+".lock CMD, or jobwatch-run --lock")
}

// checkTimer checks a timer's Persistent= and AccuracySec=.
func checkTimer(j *Job, o Options) []Finding {
	var out []Finding
	if j.Persistent && len(j.OnCalendar) > 0 {
		if gap, ok := minGap(j, o.now()); ok && gap < 24*time.Hour {
			out = append(out, Finding{File: j.PersistentAt.File, Line: j.PersistentAt.Line, Kind: KindPersistentDense,
				Severity: Warning, Job: j.Name,
				Message: fmt.Sprintf("Persistent=true with runs %s apart: after downtime the catch-up run and the next regular one look like a double run", fmtDuration(gap)),
				Fix:     "drop Persistent= (a dense timer catches up by itself), or schedule it at most daily"})
		}
	}
	if j.AccuracyAt.Line > 0 && j.Accuracy < time.Second {
		out = append(out, Finding{File: j.AccuracyAt.File, Line: j.AccuracyAt.Line, Kind: KindAccuracy, Severity: Info, Job: j.Name,
			Message: fmt.Sprintf("AccuracySec=%s: below 1s, the timer wakes the machine for itself alone", j.AccuracyAt.Value),
			Fix:     "AccuracySec=1s or more, unless the job needs sub-second precision"})
	}
	return out
}

// vendor reports a file of the distribution's unit directories.
func vendor(file string) bool {
	return strings.HasPrefix(file, "/usr/lib/systemd/") || strings.HasPrefix(file, "/lib/systemd/")
}

// cronPeriod is the smallest interval between a cron schedule's runs.
func cronPeriod(expr string) (time.Duration, bool) {
	s, err := cronSchedule(expr, time.UTC)
	if err != nil {
		return 0, false
	}
	return smallestGap(schedule.Upcoming(s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 400))
}

func smallestGap(runs []time.Time) (time.Duration, bool) {
	if len(runs) < 2 {
		return 0, false
	}
	gap := time.Duration(1<<63 - 1)
	for i := 1; i < len(runs); i++ {
		gap = min(gap, runs[i].Sub(runs[i-1]))
	}
	return gap, true
}

// minGap is the smallest interval between the timer's runs over the next
// 400 runs.
func minGap(j *Job, now time.Time) (time.Duration, bool) {
	s, err := calendarSchedule(j.OnCalendar, time.UTC)
	if err != nil {
		return 0, false
	}
	return smallestGap(schedule.Upcoming(s, now, 400))
}
