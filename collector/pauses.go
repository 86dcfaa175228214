package collector

import (
	"sync"

	"github.com/jobwatch/jobwatch/model"
)

// A job's pauses and maintenance windows (model/pause.go).
var (
	pausedDesc   = desc("job_paused", "1 while the job is paused (jobwatch pause) or in one of its maintenance windows: its expected runs are not judged and it is not stale.", jobLabels...)
	unjudgedDesc = desc("job_unjudged_runs_total", "Expected runs of the job without a run that were not judged missed, by reason: paused, maintenance, unknown (they fell while jobwatch was not running, and only check-ins report the job).", "job_name", "reason")
)

func init() { jobDescs = append(jobDescs, pausedDesc, unjudgedDesc) }

// unjudgedOrder is model.UnjudgedReasons' indexes in name order.
var unjudgedOrder = sync.OnceValue(func() []int { return byName(model.UnjudgedReasons) })

// pauses: whether the job is paused now, and the runs its pauses left
// unjudged, by reason, each from when it first counts. Paused reads the
// state alone, which the model changes when a pause or window begins or
// ends: it is rendered with the job, not at each scrape.
func (e *jobSeries) pauses(j *model.JobView) {
	if j.Retired.IsZero() && pausable(j) {
		e.gauge(pausedDesc, boolFloat(j.Pauses.Why() != ""))
	}
	counts := j.Pauses.UnjudgedCounts()
	for _, i := range unjudgedOrder() {
		if n := counts[i]; n > 0 { // appears when it first counts, as skips do
			e.counterBy(unjudgedDesc, n, model.UnjudgedReasons[i])
		}
	}
}

// pausable reports whether the job has jobwatch_job_paused: it appears
// once it counts, as the series of rare kinds do (docs/metrics.md), for a
// job with a maintenance window configured or one that has been paused
// since the state began (a pause in force, or the end of one, saved).
// Most jobs never are, and a series of zeros each was 45 bytes a job.
func pausable(j *model.JobView) bool {
	return len(j.Spec.Maintenance) > 0 || j.Pauses.Why() != "" || !j.Pauses.Ended().IsZero()
}
