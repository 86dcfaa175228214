package status

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

//go:embed page.html.tmpl
var pageFS embed.FS

// pages are parsed on first use, not when the package is initialised: every
// command of the binary, jobwatch run too, would pay for it.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"ago":      ago,
		"until":    until,
		"due":      due,
		"dur":      durText,
		"durp":     durPtr,
		"when":     whenText,
		"upper":    strings.ToUpper,
		"plural":   plural,
		"since":    func(now time.Time, t *time.Time) string { return durCoarse(max(now.Sub(*t).Seconds(), 0)) },
		"label":    stateLabel,
		"labels":   sortedLabels,
		"timeline": func(j Job, slots []Slot, now time.Time) template.HTML { return timeline(j, slots, now) },
		"window":   func(j Job) string { return durText(chartSpan(j).Seconds()) },
		"deref":    func(p any) any { return deref(p) },
		"lastFailure": func(j Job) *Run {
			for i := range j.RecentRuns {
				switch j.RecentRuns[i].Result {
				case string(model.Failure), string(model.Timeout), string(model.Lost), string(model.TooShort):
					return &j.RecentRuns[i]
				}
			}
			return nil
		},
	}).ParseFS(pageFS, "page.html.tmpl"))
})

// PageOptions are what a page shows beside the report.
type PageOptions struct {
	Title   string // default "jobwatch"
	Refresh time.Duration
	// Prefix is the URL path the pages are under ("" or an external URL's
	// path), for links.
	Prefix string
}

type pageData struct {
	PageOptions
	Report
	Job *Job
	// Observed: the job's observations besides runs, as lines by kind.
	Observed []observedList
	Slots    []Slot
	Counts   []stateCount
	// State is the state the index is filtered to, "" for all; All is
	// the number of jobs in all states.
	State string
	All   int
	Now   time.Time
	// Labels are the labels the index is filtered to (?label=), and
	// LabelCounts every label value of the jobs, to filter by.
	Labels      []LabelMatch
	LabelCounts []labelCount
	// AllHref is the index in every state, with the label filter;
	// AnyLabelHref in the state, without it.
	AllHref, AnyLabelHref string
}

type stateCount struct {
	State string
	N     int
	Href  string // the index filtered to the state, and to the labels
}

// States are the job states, most urgent first: the order of the status
// page's rows and counts.
var States = []string{StateStale, StateFailing, StateOverlapping, StateLate, StateRunning, StateOK, StateNeverSeen, StatePaused, StateRetired}

// KnownState reports whether s is one of States.
func KnownState(s string) bool { return slices.Contains(States, s) }

func stateRank(s string) int {
	if i := slices.Index(States, s); i >= 0 {
		return i
	}
	return len(States)
}

// stateLabel is how a state reads on the page: never_seen as "never seen".
func stateLabel(s string) string { return strings.ReplaceAll(s, "_", " ") }

// WriteIndex writes the status page of all jobs, the most urgent first.
// With state set (one of States) it lists only the jobs in that state,
// with labels only the jobs that have each.
func WriteIndex(w io.Writer, rep Report, o PageOptions, state string, labels ...LabelMatch) error {
	d := pageData{PageOptions: defaults(o), Report: rep, Now: rep.GeneratedAt, State: state, Labels: labels}
	d.LabelCounts = labelCounts(rep.Jobs)
	rep = FilterLabels(rep, labels)
	d.All = len(rep.Jobs)
	href := func(state string, labels []LabelMatch) string {
		q := labelQuery(labels)
		if state != "" {
			q.Set("state", state)
		}
		if len(q) == 0 {
			return d.Prefix + "/status"
		}
		return d.Prefix + "/status?" + q.Encode()
	}
	d.AllHref, d.AnyLabelHref = href("", labels), href(state, nil)
	for i := range d.LabelCounts {
		lc := &d.LabelCounts[i]
		lc.Href, lc.Current = href(state, []LabelMatch{lc.Match}), slices.Contains(labels, lc.Match)
	}
	n := map[string]int{}
	for _, j := range rep.Jobs {
		n[j.State]++
	}
	for _, s := range States {
		if n[s] > 0 || s == state {
			d.Counts = append(d.Counts, stateCount{s, n[s], href(s, labels)})
		}
	}
	jobs := make([]Job, 0, len(rep.Jobs))
	for _, j := range rep.Jobs {
		if state == "" || j.State == state {
			jobs = append(jobs, j)
		}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if c := stateRank(a.State) - stateRank(b.State); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	d.Jobs = jobs
	return pages().ExecuteTemplate(w, "index", d)
}

// WriteJob writes one job's page; slots are its expected runs in the
// run chart's window (ExpectedSlots), nil for a job without a calendar.
func WriteJob(w io.Writer, rep Report, j *Job, slots []Slot, o PageOptions) error {
	observed, err := observedLists(j.Observations)
	if err != nil {
		return err
	}
	d := pageData{PageOptions: defaults(o), Report: rep, Job: j, Observed: observed, Slots: slots, Now: rep.GeneratedAt}
	return pages().ExecuteTemplate(w, "job", d)
}

// plural writes n and the noun, in the plural unless n is 1:
// "1 overlap", "2 overlaps"; a noun whose plural is not noun+"s" gives it
// after a "|" ("1 entry|entries").
func plural(n any, noun string) string {
	var v float64
	switch x := n.(type) {
	case int:
		v = float64(x)
	case uint64:
		v = float64(x)
	case float64:
		v = x
	}
	one, many, ok := strings.Cut(noun, "|")
	if !ok {
		many = one + "s"
	}
	if v == 1 {
		return fmt.Sprintf("%v %s", n, one)
	}
	return fmt.Sprintf("%v %s", n, many)
}

func defaults(o PageOptions) PageOptions {
	if o.Title == "" {
		o.Title = "jobwatch"
	}
	if o.Refresh == 0 {
		o.Refresh = 15 * time.Second
	}
	return o
}

// maxMissedMarks bounds the missed runs looked for and drawn on a job page.
const maxMissedMarks = 200

// Slot is an expected run of a calendar job and what became of it.
type Slot struct {
	At   time.Time
	Kind string // SlotRan, SlotSkipped or SlotMissed
}

// The kinds of slots.
const (
	SlotRan     = "ran"     // a run started within grace
	SlotSkipped = "skipped" // the run that started declined to run
	SlotMissed  = "missed"  // no run started within grace
)

// MissedSlots returns a calendar job's expected runs since its oldest recent
// run that no recent run started for within grace, at most maxMissedMarks.
func MissedSlots(v *model.JobView, now time.Time) []time.Time {
	var out []time.Time
	for _, sl := range slots(v, time.Time{}, now, maxMissedMarks) {
		if sl.Kind == SlotMissed {
			out = append(out, sl.At)
		}
	}
	return out
}

// ExpectedSlots returns a calendar job's expected runs from from until
// grace before now (at most maxMissedMarks), each as ran, skipped or
// missed; those before its oldest recent run, of which nothing is known,
// are left out.
func ExpectedSlots(v *model.JobView, from, now time.Time) []Slot {
	return slots(v, from, now, maxMissedMarks)
}

// slots lists the expected runs from the later of from and the oldest
// recent run; limit bounds the missed ones.
func slots(v *model.JobView, from, now time.Time, limit int) []Slot {
	s := v.Spec.Schedule
	recent := v.RecentRuns()
	if _, every := s.(schedule.Every); every || s == nil || len(recent) == 0 {
		return nil
	}
	type start struct {
		at      time.Time
		skipped bool
	}
	starts := make([]start, 0, len(recent)+len(v.Open))
	for _, run := range recent {
		r := run.Fields()
		at := r.Start
		if at.IsZero() {
			at = r.End
		}
		starts = append(starts, start{at, r.Result == model.Skipped})
	}
	for _, r := range v.Open {
		starts = append(starts, start{at: r.Start.Time()})
	}
	if first := starts[0].at; from.Before(first) {
		from = first
	}
	var out []Slot
	missed := 0
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(now.Add(-v.Spec.Grace)) && missed < limit; t = s.Next(t) {
		sl := Slot{At: t, Kind: SlotMissed}
		for _, st := range starts {
			if !st.at.Before(t) && st.at.Sub(t) <= v.Spec.Grace {
				sl.Kind = SlotRan
				if st.skipped {
					sl.Kind = SlotSkipped
				}
				break
			}
		}
		if sl.Kind == SlotMissed {
			missed++
		}
		out = append(out, sl)
	}
	return out
}

func durText(sec float64) string {
	if sec < 1 {
		return fmt.Sprintf("%.0fms", sec*1000)
	}
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func durPtr(p *float64) string {
	if p == nil {
		return "–"
	}
	return durText(*p)
}

func ago(now time.Time, t *time.Time) string {
	if t == nil {
		return "never"
	}
	return durText(max(now.Sub(*t).Seconds(), 0)) + " ago"
}

func until(now time.Time, t *time.Time) string {
	if t == nil {
		return "–"
	}
	if d := t.Sub(now).Seconds(); d >= 0 {
		return "in " + durText(d)
	}
	return durText(now.Sub(*t).Seconds()) + " ago"
}

// due says on the page when a run is due: "in 8m00s", or "overdue 53m" once
// it has passed (to the minute: the seconds of a delay do not matter).
func due(now time.Time, t *time.Time) string {
	if t != nil && t.Before(now) {
		return "overdue " + durCoarse(now.Sub(*t).Seconds())
	}
	return until(now, t)
}

// durCoarse writes a duration to the minute past a minute: 45s, 53m,
// 2h05m, 3d04h.
func durCoarse(sec float64) string {
	if sec >= 60 && sec < 3600 {
		return fmt.Sprintf("%dm", int(sec/60))
	}
	return durText(sec)
}

func whenText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}

func deref(p any) any {
	switch v := p.(type) {
	case *bool:
		return *v
	case *int:
		return *v
	case *float64:
		return *v
	}
	return p
}
