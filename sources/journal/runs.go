// Interpreting journal entries: a unit's start job, its process exit and
// result, its output, and cron's lines, turned into the starts and ends of
// runs, with the ended runs kept against replays.

package journal

import (
	"strconv"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/model"
)

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
