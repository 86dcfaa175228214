package status

import (
	"net/url"
	"strconv"

	"github.com/jobwatch/jobwatch/model"
)

// The job list API carries excerpts of the outputs only, of its jobs'
// latest runs, and pages; a job's own API carries its kept outputs whole
// (docs/status.md).
const (
	// ListExcerpt bounds the output of a run in the job list: its end.
	ListExcerpt = 1 << 10
	// ListRuns bounds the recent runs of each job in the job list.
	ListRuns = 20
	// MaxListLimit bounds ?limit=.
	MaxListLimit = 1000
)

// OutputFunc reads an output a source keeps, by the reference its records
// carry.
type OutputFunc func(ref string) (string, error)

// withOutputs fills the outputs of j's recent runs that a source keeps,
// each cut to its last max bytes (0: whole); one that cannot be read any
// more says so.
func withOutputs(j *Job, read OutputFunc, max int) {
	for i := range j.RecentRuns {
		r := &j.RecentRuns[i]
		if r.OutputRef != "" && r.Output == "" && read != nil {
			out, err := read(r.OutputRef)
			if err != nil {
				out = "(output no longer kept: " + err.Error() + ")"
			}
			r.Output = out
		}
		if max > 0 {
			r.Output = model.OutputTail(r.Output, max)
		}
	}
}

// listPage is the job list of rep as the API serves it: the jobs after
// ?after= (by name), at most ?limit= of them, each with its latest ListRuns
// runs and their outputs' excerpts; Next names the page after it.
func listPage(rep Report, q url.Values, read OutputFunc) (Report, error) {
	limit := len(rep.Jobs)
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxListLimit {
			return rep, errBadLimit
		}
		limit = n
	}
	ms, err := ParseLabelMatches(q["label"])
	if err != nil {
		return rep, apiError(err.Error())
	}
	rep = FilterLabels(rep, ms)
	after := q.Get("after")
	var jobs []Job
	for _, j := range rep.Jobs {
		if after != "" && j.Name <= after {
			continue
		}
		if len(jobs) == limit {
			rep.Next = jobs[len(jobs)-1].Name
			break
		}
		if len(j.RecentRuns) > ListRuns {
			j.RecentRuns = j.RecentRuns[:ListRuns]
		}
		j.RecentRuns = append([]Run(nil), j.RecentRuns...)
		withOutputs(&j, read, ListExcerpt)
		jobs = append(jobs, j)
	}
	rep.Jobs = jobs
	if rep.Jobs == nil {
		rep.Jobs = []Job{}
	}
	return rep, nil
}

type apiError string

func (e apiError) Error() string { return string(e) }

const errBadLimit = apiError("limit must be a number from 1 to 1000")
