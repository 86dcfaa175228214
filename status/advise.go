package status

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// Advice thresholds. The right timeout is the P99 of real durations with a
// 2-3× margin; the right lock TTL 1.5-2× the longest run.
const (
	// MinRunsForAdvice: fewer durations say too little about the tail.
	MinRunsForAdvice = 20
	// TightTimeout: a timeout below this multiple of P99 kills healthy
	// slow runs (JobwatchJobTimeoutTooTight).
	TightTimeout = 1.5
	// ShortLockTTL: a lease below this multiple of the longest run lasts
	// through a run only because it is renewed.
	ShortLockTTL  = 1.5
	timeoutMargin = 3.0
	lockTTLMargin = 2.0
	// renewalsPerTTL: jobwatch run renews its Redis lease every third of it.
	renewalsPerTTL = 3
)

// Advice is what `jobwatch advise` says of one job.
type Advice struct {
	Job string
	// Durations are those of the job's recent successful runs, which the
	// timeout is judged on; nil when none succeeded.
	Durations                          *Durations
	Timeout                            *float64
	LockTTL                            *float64 // the configured lease, from the run records
	RecommendTimeout, RecommendLockTTL float64
	RecommendMinDuration               float64
	Notes                              []string
}

// Advise judges a job's timeout against the durations of its recent
// successful runs (a run that failed in 5 ms says nothing of how long a
// healthy one takes), and its Redis lease, when its runs hold one, against
// the longest of its finished runs (a failing run holds the lock as long as
// it runs).
func Advise(j Job) Advice {
	a := Advice{Job: j.Name, Durations: successDurations(j), Timeout: j.TimeoutSeconds, LockTTL: j.LockTTLSeconds}
	a.Notes = append(a.Notes, a.timeoutNotes(j)...)
	a.Notes = append(a.Notes, a.minDurationNotes(j)...)
	if j.LockTTLSeconds != nil {
		if d := j.Durations; d == nil || d.Count < MinRunsForAdvice {
			a.Notes = append(a.Notes, fmt.Sprintf("too few finished runs with a duration (%d of %d) for lock TTL advice", countOf(d), MinRunsForAdvice))
		} else {
			a.RecommendLockTTL = roundUp(lockTTLMargin * d.Max)
			a.Notes = append(a.Notes, lockTTLNotes(j, a.RecommendLockTTL)...)
		}
	}
	if len(a.Notes) == 0 {
		a.Notes = append(a.Notes, a.disagreements()...)
	}
	if len(a.Notes) == 0 {
		a.Notes = append(a.Notes, "ok")
	}
	return a
}

// agreeWithin: a configured value agrees with the suggestion when neither
// is more than this multiple of the other. "ok" is said only when every
// suggestion agrees with the configuration: a 4 s timeout suggested
// against the configured 8 s is not ok.
const agreeWithin = 1.5

// disagreements say whether the configured timeout differs from the one
// suggested beyond agreeWithin, for a job the other notes found nothing
// wrong with.
func (a *Advice) disagreements() []string {
	var notes []string
	differ := func(what string, configured *float64, suggested float64, why string) {
		if configured == nil || suggested <= 0 || (*configured <= agreeWithin*suggested && suggested <= agreeWithin**configured) {
			return
		}
		verb := "lower"
		if *configured < suggested {
			verb = "raise"
		}
		notes = append(notes, fmt.Sprintf("%s %s differs from the suggested %s (%s): %s it to %s",
			what, promSeconds(*configured), promSeconds(suggested), why, verb, promSeconds(suggested)))
	}
	if a.Durations != nil {
		differ("timeout", a.Timeout, a.RecommendTimeout, fmt.Sprintf("%.0f × P99 %s", timeoutMargin, msSeconds(a.Durations.P99)))
	}
	// A lease is judged by lockTTLNotes alone: one longer than suggested
	// costs only when a host dies holding it, which they weigh against the
	// period.
	return notes
}

// timeoutNotes sets the suggested timeout from the successful runs'
// durations and says what is wrong with the configured one.
func (a *Advice) timeoutNotes(j Job) []string {
	d := a.Durations
	if d == nil {
		const why = "the timeout is judged on successful runs only"
		if n := finishedRecent(j); n > 0 {
			return []string{fmt.Sprintf("history too short: none of the last %d finished runs succeeded with a duration; %s", n, why)}
		}
		return []string{"history too short: no finished run yet; " + why}
	}
	if d.Count < MinRunsForAdvice {
		return []string{fmt.Sprintf("too few successful runs with a duration (%d of %d) for timeout advice", d.Count, MinRunsForAdvice)}
	}
	a.RecommendTimeout = roundUp(timeoutMargin * d.P99)
	var notes []string
	switch {
	case j.TimeoutSeconds == nil:
		notes = append(notes, "no timeout: a hung run holds its lock forever; set timeout: "+promSeconds(a.RecommendTimeout))
	case *j.TimeoutSeconds < TightTimeout*d.P99:
		notes = append(notes, fmt.Sprintf("timeout %s is below %.1f × P99 (%s): healthy slow runs get killed; raise it to %s",
			promSeconds(*j.TimeoutSeconds), TightTimeout, promSeconds(d.P99), promSeconds(a.RecommendTimeout)))
	}
	if j.PeriodSeconds > 0 && d.P99 > j.PeriodSeconds {
		notes = append(notes, fmt.Sprintf("P99 %s outlasts the period %s: without a lock, runs overlap", promSeconds(d.P99), promSeconds(j.PeriodSeconds)))
	}
	return notes
}

// minDurationFraction: a run shorter than this fraction of the shortest
// successful one did nothing (min_duration's suggestion); minDurationFloor:
// below it, runs are too short to tell doing nothing from doing little.
const (
	minDurationFraction = 0.1
	minDurationFloor    = 1.0
)

// minDurationNotes suggests a min_duration from the successful runs'
// durations, for a job that has none: a tenth of the shortest.
func (a *Advice) minDurationNotes(j Job) []string {
	d := a.Durations
	if j.MinDurationSeconds != nil || d == nil || d.Count < MinRunsForAdvice {
		return nil // timeoutNotes says the history is too short
	}
	a.RecommendMinDuration = math.Floor(minDurationFraction * d.Min)
	if a.RecommendMinDuration < minDurationFloor {
		a.RecommendMinDuration = 0
		return nil
	}
	return []string{fmt.Sprintf("no min_duration: a run that does nothing passes for a success; the shortest of %d successful runs took %s: set min_duration: %s",
		d.Count, promSeconds(d.Min), promSeconds(a.RecommendMinDuration))}
}

// successDurations are the quantiles of the job's successful runs'
// durations. The job's duration history (its last 100 finished runs) mixes
// every result: it is used whole only when the job has never finished
// otherwise than with success; else the durations come from its recent runs
// (the last 50, skips among them) whose result is success. Nil when none.
func successDurations(j Job) *Durations {
	if j.Durations != nil && onlySuccesses(j.Runs) {
		return j.Durations
	}
	var h []float64
	for _, r := range j.RecentRuns {
		if r.Result == string(model.Success) && r.DurationSeconds != nil {
			h = append(h, *r.DurationSeconds)
		}
	}
	if len(h) == 0 {
		return nil
	}
	p50, _ := model.DurationQuantile(h, 0.5)
	p99, _ := model.DurationQuantile(h, 0.99)
	maxD, _ := model.DurationQuantile(h, 1)
	minD, _ := model.DurationQuantile(h, 0)
	return &Durations{Count: len(h), P50: p50, P99: p99, Max: maxD, Min: minD}
}

// onlySuccesses: the job has finished runs, every one a success.
func onlySuccesses(runs map[string]uint64) bool {
	for res, n := range runs {
		if res != string(model.Success) && n > 0 {
			return false
		}
	}
	return runs[string(model.Success)] > 0
}

// finishedRecent counts the job's recent runs that finished (not skips).
func finishedRecent(j Job) int {
	n := 0
	for _, r := range j.RecentRuns {
		if r.Result != string(model.Skipped) {
			n++
		}
	}
	return n
}

func countOf(d *Durations) int {
	if d == nil {
		return 0
	}
	return d.Count
}

// lockTTLNotes judges the configured lease against the longest run and the
// period. The lease jobwatch run records is renewed every third of it, so a
// lease shorter than a run is not wrong in itself: what the on-call engineer
// must know is what breaks it (a wrapper that stops renewing) and what it
// then lets happen (a second copy on another host).
func lockTTLNotes(j Job, suggested float64) []string {
	if j.LockTTLSeconds == nil {
		return nil
	}
	ttl, longest := *j.LockTTLSeconds, j.Durations.Max
	var notes []string
	switch {
	case ttl < longest:
		notes = append(notes, fmt.Sprintf("lock TTL %s is shorter than the longest run (%s): the lock lasts through a run only because "+
			"jobwatch run renews it every %s; if it cannot renew it for %s less its margin (Redis unreachable), it stops the job before the key expires, "+
			"and a host paused past it (a stalled VM) lets another host start a second copy; %s outlasts the longest run",
			msSeconds(ttl), promSeconds(longest), msSeconds(ttl/renewalsPerTTL), msSeconds(ttl), promSeconds(suggested)))
	case ttl < ShortLockTTL*longest:
		notes = append(notes, fmt.Sprintf("lock TTL %s is below %.1f × the longest run (%s): if jobwatch run cannot renew it "+
			"(Redis unreachable), a run a little longer than any so far is stopped before the key expires, or, on a host paused past it, "+
			"overlaps a second copy on another host; %s leaves room", msSeconds(ttl), ShortLockTTL, promSeconds(longest), promSeconds(suggested)))
	}
	if p := j.PeriodSeconds; p > 0 && ttl > p && suggested < ttl {
		runs := "1 run"
		if n := int(ttl / p); n > 1 {
			runs = fmt.Sprintf("%d runs", n)
		}
		notes = append(notes, fmt.Sprintf("lock TTL %s outlasts the period %s: a host that dies holding the lock makes every other host "+
			"skip for up to %s (%s); %s is enough", msSeconds(ttl), promSeconds(p), msSeconds(ttl), runs, promSeconds(suggested)))
	}
	return notes
}

// roundUp rounds seconds up to a duration a person would write: whole
// seconds under a minute, then whole minutes, then whole hours.
func roundUp(sec float64) float64 {
	switch {
	case sec <= 60:
		return math.Ceil(sec)
	case sec <= 3600:
		return math.Ceil(sec/60) * 60
	}
	return math.Ceil(sec/3600) * 3600
}

func promSeconds(sec float64) string {
	if sec < 1 {
		return fmt.Sprintf("%.0fms", sec*1000)
	}
	return promDuration(time.Duration(math.Round(sec)) * time.Second)
}

// msSeconds is promSeconds to the millisecond, for a configured lease (a
// 1.5s TTL is not 2s) and its renewal interval.
func msSeconds(sec float64) string {
	if sec < 1 {
		return promSeconds(sec)
	}
	return promDuration(time.Duration(math.Round(sec*1000)) * time.Millisecond)
}

// WriteAdvice prints the advice of every job of rep: the durations of its
// recent successful runs, its timeout and lock TTL, and the suggestions.
func WriteAdvice(w io.Writer, rep Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tRUNS\tP50\tP99\tMAX\tTIMEOUT\tSUGGESTED TIMEOUT\tLOCK TTL\tSUGGESTED LOCK TTL\tADVICE")
	opt := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return promSeconds(*p)
	}
	optMS := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return msSeconds(*p)
	}
	for _, j := range rep.Jobs {
		if j.RetiredSince != nil {
			continue // gone from the host: no timeout or lock to set
		}
		a := Advise(j)
		runs, p50, p99, maxD, sugT, sugL := "0", "-", "-", "-", "-", "-"
		if d := a.Durations; d != nil {
			runs, p50, p99, maxD = fmt.Sprint(d.Count), promSeconds(d.P50), promSeconds(d.P99), promSeconds(d.Max)
		}
		if a.RecommendTimeout > 0 {
			sugT = promSeconds(a.RecommendTimeout)
		}
		if a.RecommendLockTTL > 0 {
			sugL = promSeconds(a.RecommendLockTTL)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, runs, p50, p99, maxD, opt(a.Timeout), sugT, optMS(a.LockTTL), sugL, strings.Join(a.Notes, "; "))
	}
	return tw.Flush()
}
