package status

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/jobwatch/jobwatch/model"
)

// AlertAfter is how many failures, missed runs or skips in a row make the
// bundled rules alert on the job: its alert_after:, the defaults where it
// sets none.
type AlertAfter struct {
	Failures   int `json:"failures"`
	MissedRuns int `json:"missed_runs"`
	Skips      int `json:"skips"`
}

func alertAfterOf(a model.AlertAfter) AlertAfter {
	a = a.OrDefault()
	return AlertAfter{Failures: a.Failures, MissedRuns: a.MissedRuns, Skips: a.Skips}
}

// LabelMatch is one name=value of a job's labels that a listing asks for
// (`jobwatch status --label team=payments`, /api/v1/jobs?label=...); an
// empty value asks for the jobs without the label.
type LabelMatch struct{ Name, Value string }

func (m LabelMatch) String() string { return m.Name + "=" + m.Value }

// ParseLabelMatches reads name=value pairs; every bad one is reported.
func ParseLabelMatches(list []string) ([]LabelMatch, error) {
	var out []LabelMatch
	var bad []string
	for _, s := range list {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			bad = append(bad, fmt.Sprintf("%q", s))
			continue
		}
		out = append(out, LabelMatch{name, value})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("label %s: want NAME=VALUE, like team=payments", strings.Join(bad, ", "))
	}
	return out, nil
}

// Matches: j has every label of ms with its value.
func (j *Job) Matches(ms []LabelMatch) bool {
	for _, m := range ms {
		if j.Labels[m.Name] != m.Value {
			return false
		}
	}
	return true
}

// FilterLabels keeps the jobs of rep that have every label of ms.
func FilterLabels(rep Report, ms []LabelMatch) Report {
	if len(ms) == 0 {
		return rep
	}
	jobs := make([]Job, 0, len(rep.Jobs))
	for _, j := range rep.Jobs {
		if j.Matches(ms) {
			jobs = append(jobs, j)
		}
	}
	rep.Jobs = jobs
	return rep
}

// labelQuery is ms as the query of a listing: label=name%3Dvalue each.
func labelQuery(ms []LabelMatch) url.Values {
	q := url.Values{}
	for _, m := range ms {
		q.Add("label", m.String())
	}
	return q
}

// labelCount is how many of the listed jobs have a label's value.
type labelCount struct {
	Match LabelMatch
	N     int
	Href  string // the index filtered to it
	// Current: the index is filtered to it.
	Current bool
}

// labelCounts counts each name=value of the jobs' labels, by name then
// value; empty values (a label another job has) are left out.
func labelCounts(jobs []Job) []labelCount {
	n := map[LabelMatch]int{}
	for _, j := range jobs {
		for k, v := range j.Labels {
			if v != "" {
				n[LabelMatch{k, v}]++
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(n), func(a, b LabelMatch) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	out := make([]labelCount, len(keys))
	for i, k := range keys {
		out[i] = labelCount{Match: k, N: n[k]}
	}
	return out
}

// sortedLabels are a job's labels with a value, by name, for the page.
func sortedLabels(l map[string]string) []LabelMatch {
	var out []LabelMatch
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if l[k] != "" {
			out = append(out, LabelMatch{k, l[k]})
		}
	}
	return out
}

// nonNilLabels is l, or an empty map: the API writes {} for no labels.
func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}
