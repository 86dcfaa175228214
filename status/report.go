// Package status renders the job model for people and scripts: the status
// page (/status, /status/job/NAME), its JSON API (/api/v1/jobs), and the
// states `jobwatch status` and `jobwatch check` print. It reads the same
// views the collector renders and writes nothing.
package status

import (
	"fmt"
	"time"

	prommodel "github.com/prometheus/common/model"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// Job states, from the most to the least urgent.
const (
	StateStale   = "stale"   // no success for stale_multiple periods: JobwatchJobStale fires
	StateFailing = "failing" // the last finished run read did not succeed
	// StateOverlapping: two runs are in progress at once where one is
	// allowed (on one host, or anywhere for a cluster-scope job).
	StateOverlapping = "overlapping"
	StateLate        = "late"       // an expected run has not started within grace
	StateRunning     = "running"    // a run is in progress
	StateNeverSeen   = "never_seen" // no record of the job has been read yet
	StateOK          = "ok"
	// StateRetired: host mode found the job, and it has gone from the
	// host; nothing is expected of it, its history is kept.
	StateRetired = "retired"
)

// Report is the document of /api/v1/jobs. Field names are a contract
// (docs/status.md).
type Report struct {
	GeneratedAt time.Time      `json:"generated_at"`
	Jobs        []Job          `json:"jobs"`
	Sources     []SourceStatus `json:"sources"`
	// Next is the ?after= of the job list's next page, when it has one.
	Next string `json:"next,omitempty"`
	// Proposals are jobs for the config file check-ins made or proposed
	// (the index page's, not the API's).
	Proposals []Proposal `json:"-"`
}

// Job is one job's status.
type Job struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Scope    string `json:"scope"`
	Schedule string `json:"schedule"`
	// Labels are the job's labels from the config ({} for none), and
	// AlertAfter the runs in a row the bundled rules alert at
	// (docs/ownership.md).
	Labels     map[string]string `json:"labels"`
	AlertAfter AlertAfter        `json:"alert_after"`

	// RetiredSince is when a job host mode found disappeared from the host
	// (state retired); nil while it is watched.
	RetiredSince *time.Time `json:"retired_since"`

	SecondsSinceLastSuccess float64    `json:"seconds_since_last_success"`
	LastSuccess             *time.Time `json:"last_success"`
	LastFailure             *time.Time `json:"last_failure"`
	LastStart               *time.Time `json:"last_start"`
	NextRun                 *time.Time `json:"next_run"`
	Deadline                *time.Time `json:"deadline"`
	PeriodSeconds           float64    `json:"period_seconds"`
	TimeoutSeconds          *float64   `json:"timeout_seconds"`
	MinDurationSeconds      *float64   `json:"min_duration_seconds"`
	LastDurationSeconds     *float64   `json:"last_duration_seconds"`
	// TypicalDurationSeconds is the mean of the finished runs' durations.
	TypicalDurationSeconds *float64 `json:"typical_duration_seconds"`
	LastExitCode           *int     `json:"last_exit_code"`
	// Durations summarises the last finished runs' durations, for advice
	// on timeouts and lock TTLs; nil before the first.
	Durations *Durations `json:"durations"`
	// LockTTLSeconds is the shared lock's lease, as the job's latest start
	// record that named one says (jobwatch run --lock-redis); nil when none
	// has.
	LockTTLSeconds *float64 `json:"lock_ttl_seconds"`

	// LastRunFailed: the job's latest finished run by its end, a success or
	// a failure (unknown results pass over), failed. A fact, shown the
	// moment its record is read; ConsecutiveFailures is a verdict, made at
	// the watermark (docs/metrics.md, "Facts and verdicts").
	// HeldEnds counts its records of finished runs read but not decided
	// yet: while there are any, the runs in a row are those before them.
	LastRunFailed       bool              `json:"last_run_failed"`
	HeldEnds            int               `json:"held_ends"`
	ConsecutiveFailures uint64            `json:"consecutive_failures"`
	ConsecutiveSkips    uint64            `json:"consecutive_skips"`
	ConsecutiveMissed   uint64            `json:"consecutive_missed_runs"`
	Runs                map[string]uint64 `json:"runs_total"`
	Skips               uint64            `json:"skips_total"`
	SkipsByReason       map[string]uint64 `json:"skips_by_reason"`
	LockLost            map[string]uint64 `json:"lock_lost_total"`
	Overlaps            uint64            `json:"overlaps_total"`
	Missed              uint64            `json:"missed_runs_total"`
	Unexpected          uint64            `json:"unexpected_runs_total"`

	// DecisionsBehindSeconds is how far behind now its verdicts are (they
	// wait for every source that reports it to read past a time), and
	// HeldRecords its records read but not decided yet.
	DecisionsBehindSeconds float64 `json:"decisions_behind_seconds"`
	HeldRecords            int     `json:"held_records"`

	// Paused: why and until when the job is paused, null when it is not;
	// Unjudged: its expected runs left unjudged by reason (paused,
	// maintenance, unknown).
	Paused   *Paused           `json:"paused"`
	Unjudged map[string]uint64 `json:"unjudged_runs_total"`

	// Note says what jobwatch cannot know of the job and how to make it
	// known: ResultsUnloggedNote when its latest run's result is unknown
	// (cron at -L 1 logs starts only). Empty when there is nothing to say.
	Note string `json:"note,omitempty"`

	Running    []RunningRun `json:"running"`
	RecentRuns []Run        `json:"recent_runs"`
	// Observations: what sources observe of it besides runs (its locks'
	// states), by kind.
	Observations Observations `json:"observations"`
}

// Durations are quantiles of a job's last finished runs' durations.
type Durations struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
	Max   float64 `json:"max_seconds"`
	Min   float64 `json:"min_seconds"`
}

// RunningRun is a run in progress.
type RunningRun struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid,omitempty"`
	RunID      string    `json:"run_id,omitempty"`
	Started    time.Time `json:"started"`
	AgeSeconds float64   `json:"age_seconds"`
	Source     string    `json:"source"`
}

// Run is one of a job's recent runs, newest first.
type Run struct {
	Start           *time.Time `json:"start"`
	End             time.Time  `json:"end"`
	DurationSeconds *float64   `json:"duration_seconds"`
	// Result is success, failure, timeout, lost, too_short, unknown or
	// skipped.
	Result   string `json:"result"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Reason: why it was skipped, or why it ended early (lock_lost).
	Reason string `json:"reason,omitempty"`
	// Lock and Holder: for a skip, the lock layer that refused (file,
	// redis, mysql) and who held it.
	Lock   string `json:"lock,omitempty"`
	Holder string `json:"holder,omitempty"`
	Output string `json:"output,omitempty"`
	// OutputRef names an output a source keeps (a check-in's), which the
	// handler reads for the API and the page.
	OutputRef string `json:"-"`
	// Overlapped: it started while another run of the job was in progress.
	Overlapped bool `json:"overlapped,omitempty"`
}

// SourceStatus is one source's health.
type SourceStatus struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Up   bool   `json:"up"`
	// Reason is why it is down, as the source said.
	Reason      string `json:"reason,omitempty"`
	Records     uint64 `json:"records_total"`
	ParseErrors uint64 `json:"parse_errors_total"`
	LateRecords uint64 `json:"late_records_total"`
}

// Build makes the report of a model view at now.
func Build(jobs []model.JobView, sources []model.SourceView, now time.Time) Report {
	rep := Report{GeneratedAt: now.UTC(), Jobs: make([]Job, 0, len(jobs)), Sources: make([]SourceStatus, 0, len(sources))}
	observed := observationsByJob(sources, now)
	srcs := make([]*model.SourceView, len(sources))
	for i, s := range sources {
		srcs[i] = &sources[i]
		rep.Sources = append(rep.Sources, SourceStatus{Name: s.Name, Type: s.Type, Up: s.Up, Reason: s.Reason, Records: s.Records, ParseErrors: s.ParseErrors, LateRecords: s.LateRecords})
	}
	for i := range jobs {
		j := buildJob(&jobs[i], now)
		j.DecisionsBehindSeconds = jobs[i].DecisionsBehind(srcs, now).Seconds()
		j.Observations = withEveryKind(observed[j.Name])
		rep.Jobs = append(rep.Jobs, j)
	}
	return rep
}

func ptr[T any](v T) *T { return &v }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func buildJob(v *model.JobView, now time.Time) Job {
	w := v.Watch(now)
	j := Job{
		Name:                    v.Spec.Name,
		Scope:                   v.Spec.Scope,
		Schedule:                describe(v.Spec.Schedule),
		Labels:                  nonNilLabels(v.Spec.Labels),
		AlertAfter:              alertAfterOf(v.Spec.AlertAfter),
		SecondsSinceLastSuccess: w.SinceSuccess.Seconds(),
		RetiredSince:            timePtr(v.Retired.Time()),
		HeldRecords:             len(v.Pending),
		LastSuccess:             timePtr(v.LastSuccess.Time()),
		LastFailure:             timePtr(v.LastFailure.Time()),
		LastStart:               timePtr(v.LastStart.Time()),
		LastRunFailed:           v.LastFailure.After(v.LastSuccess.Time()),
		HeldEnds:                heldEnds(v.Pending),
		NextRun:                 timePtr(w.NextRun),
		Deadline:                timePtr(w.Deadline),
		PeriodSeconds:           w.Period.Seconds(),
		ConsecutiveFailures:     v.ConsecutiveFailures,
		ConsecutiveSkips:        v.ConsecutiveSkips,
		ConsecutiveMissed:       v.ConsecutiveMissed,
		Runs:                    map[string]uint64{},
		Skips:                   v.Skips,
		SkipsByReason:           nonNilMap(v.SkipsByReason()),
		LockLost:                nonNilMap(v.LockLost()),
		Overlaps:                v.Overlaps,
		Missed:                  v.Missed,
		Unexpected:              v.Unexpected,
		Running:                 []RunningRun{},
		RecentRuns:              []Run{},
		Paused:                  pausedOf(v),
		Unjudged:                v.Pauses.UnjudgedByReason(),
	}
	if j.Scope == "" {
		j.Scope = "host"
	}
	j.setDurations(v)
	total := uint64(0)
	for i, r := range model.Results {
		j.Runs[string(r)] = v.RunCounts[i]
		total += v.RunCounts[i]
	}
	for _, r := range v.Open {
		j.Running = append(j.Running, RunningRun{Host: r.Host, PID: r.PID, RunID: r.RunID, Started: r.Start.Time().UTC(),
			AgeSeconds: max(now.Sub(r.Start.Time()).Seconds(), 0), Source: r.Source})
	}
	j.RecentRuns = recentRuns(v)
	j.State = stateOf(v, w, total, now)
	if latestFinished(j.RecentRuns) == string(model.Unknown) {
		j.Note = ResultsUnloggedNote
	}
	return j
}

// heldEnds counts the ends among a job's records held for its watermark.
func heldEnds(held []model.Held) int {
	n := 0
	for i := range held {
		if held[i].Kind() == model.End {
			n++
		}
	}
	return n
}

// ResultsUnloggedNote is a job's Note when its latest run's result is
// unknown: Debian's cron logs only job starts by default (-L 1), and
// bookworm ships /etc/default/cron with EXTRA_OPTS commented out.
const ResultsUnloggedNote = `results are not logged: set EXTRA_OPTS="-L 15" in /etc/default/cron`

// latestFinished is the result of the newest of runs (newest first) that
// ran: skipped runs passed over; "" when none did.
func latestFinished(runs []Run) string {
	for _, r := range runs {
		if r.Result != string(model.Skipped) {
			return r.Result
		}
	}
	return ""
}

// setDurations sets the job's timeout, durations, last exit code and lease,
// each null when there is none.
func (j *Job) setDurations(v *model.JobView) {
	if v.Spec.Timeout > 0 {
		j.TimeoutSeconds = ptr(v.Spec.Timeout.Seconds())
	}
	if v.Spec.MinDuration > 0 {
		j.MinDurationSeconds = ptr(v.Spec.MinDuration.Seconds())
	}
	if v.HasLastDuration {
		j.LastDurationSeconds = ptr(v.LastDuration)
	}
	if v.Durations.Count > 0 {
		j.TypicalDurationSeconds = ptr(v.Durations.Sum / float64(v.Durations.Count))
	}
	if v.HasLastExitCode {
		j.LastExitCode = ptr(v.LastExitCode)
	}
	if v.LockTTL > 0 {
		j.LockTTLSeconds = ptr(v.LockTTL.Seconds())
	}
	if h := v.LastDurations(); len(h) > 0 {
		p50, _ := model.DurationQuantile(h, 0.5)
		p99, _ := model.DurationQuantile(h, 0.99)
		maxD, _ := model.DurationQuantile(h, 1)
		minD, _ := model.DurationQuantile(h, 0)
		j.Durations = &Durations{Count: len(h), P50: p50, P99: p99, Max: maxD, Min: minD}
	}
}

// stateOf classifies a job, most urgent first: what the on-call engineer
// must look at comes before what is merely in progress.
func stateOf(v *model.JobView, w model.Watch, finished uint64, now time.Time) string {
	switch {
	case !v.Retired.IsZero():
		return StateRetired // expected no more: whatever it last did alarms no one
	case v.Pauses.Why() != "":
		return StatePaused // not judged now: it says why
	case w.Stale:
		return StateStale
	case v.LastFailure.After(v.LastSuccess.Time()):
		return StateFailing // a fact: the runs in a row wait for the watermark
	case overlapping(v):
		return StateOverlapping
	case late(v, w, now):
		return StateLate
	case len(v.Open) > 0:
		return StateRunning
	case finished == 0 && v.LastStart.IsZero() && v.Skips == 0:
		return StateNeverSeen
	}
	return StateOK
}

// overlapping: two runs in progress overlap, by the model's rule: any two
// of a cluster-scope job, two on one host of a host-scope job.
func overlapping(v *model.JobView) bool {
	for i := range v.Open {
		for k := i + 1; k < len(v.Open); k++ {
			if v.Spec.Scope == "cluster" || v.Open[i].Host == v.Open[k].Host {
				return true
			}
		}
	}
	return false
}

// late: an expected run is past its grace and no run has started since.
func late(v *model.JobView, w model.Watch, now time.Time) bool {
	if len(v.Open) > 0 || v.Spec.Schedule == nil {
		return false
	}
	var due time.Time
	switch s := v.Spec.Schedule.(type) {
	case schedule.Every:
		last := v.LastStart.Time()
		if last.IsZero() {
			last = v.FirstWatched.Time()
		}
		due = last.Add(time.Duration(s))
	default:
		// The latest expected run whose grace is over.
		due = s.Prev(now.Add(-v.Spec.Grace))
		if due.IsZero() || (v.LastStart.IsZero() && v.FirstWatched.After(due)) {
			return false // nothing was due since jobwatch knows the job
		}
		return v.LastStart.Before(due)
	}
	return now.Sub(due) > v.Spec.Grace
}

func describe(s schedule.Schedule) string {
	switch e := s.(type) {
	case nil:
		return ""
	case schedule.Every:
		return "every " + promDuration(time.Duration(e))
	}
	if str, ok := s.(fmt.Stringer); ok {
		return str.String()
	}
	return ""
}

// recentRuns lists the job's recent runs, newest first.
func recentRuns(v *model.JobView) []Run {
	recent := v.RecentRuns()
	out := make([]Run, 0, len(recent))
	for i := len(recent) - 1; i >= 0; i-- {
		r := recent[i].Fields()
		run := Run{Start: timePtr(r.Start), End: r.End.UTC(), Result: string(r.Result), Host: r.Host, PID: r.PID,
			Reason: r.Reason, Lock: r.Lock, Holder: r.Holder, Output: r.Output, OutputRef: r.OutputRef, Overlapped: r.Overlapped}
		if r.HasDuration {
			run.DurationSeconds = ptr(r.Duration.Seconds())
		}
		if r.HasExitCode {
			run.ExitCode = ptr(r.ExitCode)
		}
		out = append(out, run)
	}
	return out
}

// promDuration writes a duration as Prometheus does: 1d, 1h30m, 90s.
func promDuration(d time.Duration) string { return prommodel.Duration(d).String() }

func nonNilMap(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}
