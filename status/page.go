package status

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"jobwatch/model"
	"jobwatch/schedule"
)

//go:embed page.html.tmpl
var pageFS embed.FS

// pages are parsed on first use, not when the package is initialised: every
// command of the binary, jobwatch run too, would pay for it.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"ago":      ago,
		"until":    until,
		"dur":      durText,
		"durp":     durPtr,
		"when":     whenText,
		"upper":    strings.ToUpper,
		"timeline": func(j Job, missed []time.Time) template.HTML { return timeline(j, missed) },
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
	Missed   []time.Time
	Counts   []stateCount
	Now      time.Time
}

type stateCount struct {
	State string
	N     int
}

// WriteIndex writes the status page of all jobs.
func WriteIndex(w io.Writer, rep Report, o PageOptions) error {
	d := pageData{PageOptions: defaults(o), Report: rep, Now: rep.GeneratedAt}
	n := map[string]int{}
	for _, j := range rep.Jobs {
		n[j.State]++
	}
	for _, s := range []string{StateStale, StateFailing, StateLate, StateRunning, StateNeverSeen, StateOK} {
		if n[s] > 0 {
			d.Counts = append(d.Counts, stateCount{s, n[s]})
		}
	}
	return pages().ExecuteTemplate(w, "index", d)
}

// WriteJob writes one job's page; missed are its expected runs that no run
// started for, within the span of its recent runs.
func WriteJob(w io.Writer, rep Report, j *Job, missed []time.Time, o PageOptions) error {
	observed, err := observedLists(j.Observations)
	if err != nil {
		return err
	}
	d := pageData{PageOptions: defaults(o), Report: rep, Job: j, Observed: observed, Missed: missed, Now: rep.GeneratedAt}
	return pages().ExecuteTemplate(w, "job", d)
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

// MissedSlots returns a calendar job's expected runs since its oldest recent
// run that no recent run started for within grace, at most maxMissedMarks.
func MissedSlots(v *model.JobView, now time.Time) []time.Time {
	s := v.Spec.Schedule
	recent := v.RecentRuns()
	if _, every := s.(schedule.Every); every || s == nil || len(recent) == 0 {
		return nil
	}
	first := recent[0].Fields()
	from := first.End
	if !first.Start.IsZero() {
		from = first.Start
	}
	var starts []time.Time
	for _, run := range recent {
		r := run.Fields()
		if !r.Start.IsZero() {
			starts = append(starts, r.Start)
		} else {
			starts = append(starts, r.End)
		}
	}
	for _, r := range v.Open {
		starts = append(starts, r.Start)
	}
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(now.Add(-v.Spec.Grace)) && len(out) < maxMissedMarks; t = s.Next(t) {
		ran := false
		for _, st := range starts {
			if !st.Before(t) && st.Sub(t) <= v.Spec.Grace {
				ran = true
				break
			}
		}
		if !ran {
			out = append(out, t)
		}
	}
	return out
}

// Timeline geometry, in SVG user units.
const (
	tlWidth, tlHeight = 720.0, 160.0
	tlLeft, tlBottom  = 48.0, 20.0
)

// timeline draws the job's recent runs, oldest left: each a bar as tall as
// its duration, against lines at the period and the timeout, so a job
// creeping toward its period shows before it overlaps. Failures, timeouts
// and lost runs are coloured, skips and missed runs marked below the axis,
// overlapping runs outlined.
func timeline(j Job, missed []time.Time) template.HTML {
	runs := timelineRuns(j)
	sc := timelineScale(j, runs)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" viewBox="0 0 %g %g" role="img" aria-label="durations of the last %d runs of %s">`,
		tlWidth, tlHeight, len(runs), template.HTMLEscapeString(j.Name))
	sc.drawAxes(&b, j)
	slot := (tlWidth - tlLeft) / float64(max(len(runs), 1))
	sc.drawRuns(&b, runs, slot)
	if len(missed) > 0 && len(runs) > 0 {
		sc.drawMissed(&b, runs, missed, slot)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// timelineRuns returns the runs a timeline draws, oldest first.
func timelineRuns(j Job) []Run {
	runs := make([]Run, 0, len(j.RecentRuns))
	for i := len(j.RecentRuns) - 1; i >= 0; i-- {
		runs = append(runs, j.RecentRuns[i])
	}
	// Runs in progress are drawn last, as tall as their age so far.
	for _, r := range j.Running {
		age := r.AgeSeconds
		runs = append(runs, Run{Start: &r.Started, End: r.Started, DurationSeconds: &age, Result: "running", Host: r.Host, PID: r.PID})
	}
	return runs
}

// tlScale is a timeline's vertical scale: top is the duration at the top
// of the plot, periodAt where the period's line is drawn.
type tlScale struct {
	top, periodAt float64
	offScale      bool // the period is above top
}

func timelineScale(j Job, runs []Run) tlScale {
	longest := 0.0
	if j.TimeoutSeconds != nil {
		longest = *j.TimeoutSeconds
	}
	for _, r := range runs {
		if r.DurationSeconds != nil {
			longest = max(longest, *r.DurationSeconds)
		}
	}
	// The period is the line a creeping job runs into; when it is far above
	// every run (a daily job taking minutes), it is drawn at the top, marked
	// off scale, rather than flattening every bar.
	sc := tlScale{top: max(longest, j.PeriodSeconds), periodAt: j.PeriodSeconds}
	if longest > 0 && j.PeriodSeconds > 3*longest {
		sc = tlScale{top: 1.5 * longest, periodAt: 1.5 * longest, offScale: true}
	}
	if sc.top <= 0 {
		sc.top = 1
	}
	sc.top *= 1.1
	return sc
}

// y is the height of a duration in the plot.
func (sc tlScale) y(sec float64) float64 {
	plotH := tlHeight - tlBottom - 8
	return tlHeight - tlBottom - plotH*sec/sc.top
}

// drawAxes draws the axis, the lines at the period and the timeout, and
// the scale's labels.
func (sc tlScale) drawAxes(b *strings.Builder, j Job) {
	y := sc.y
	fmt.Fprintf(b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, tlLeft, y(0), tlWidth, y(0))
	ref := func(class, label string, at float64) {
		fmt.Fprintf(b, `<line class="%s" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/><text class="label-%s" x="%g" y="%.1f">%s</text>`,
			class, tlLeft, y(at), tlWidth, y(at), class, tlLeft+4, y(at)-3, template.HTMLEscapeString(label))
	}
	if j.PeriodSeconds > 0 {
		label := "period " + durText(j.PeriodSeconds)
		if sc.offScale {
			label += " (off scale)"
		}
		ref("period", label, sc.periodAt)
	}
	if j.TimeoutSeconds != nil {
		ref("timeout", "timeout "+durText(*j.TimeoutSeconds), *j.TimeoutSeconds)
	}
	fmt.Fprintf(b, `<text class="label-axis" x="2" y="%.1f">0</text><text class="label-axis" x="2" y="12">%s</text>`, y(0), template.HTMLEscapeString(durText(sc.top)))
}

// drawRuns draws each run in its slot: a bar, or a mark below the axis for
// a run without a duration.
func (sc tlScale) drawRuns(b *strings.Builder, runs []Run, slot float64) {
	y := sc.y
	bw := math.Min(math.Max(slot*0.7, 1), 24)
	for i, r := range runs {
		x := tlLeft + float64(i)*slot + (slot-bw)/2
		title := fmt.Sprintf("%s %s", r.End.Format(time.RFC3339), r.Result)
		if r.Result == "running" {
			title = "running since " + r.End.Format(time.RFC3339)
		}
		if r.DurationSeconds != nil {
			title += " after " + durText(*r.DurationSeconds)
		}
		if r.Host != "" {
			title += " on " + r.Host
		}
		class := "run " + r.Result
		if r.Overlapped {
			class += " overlapped"
		}
		if r.Result == string(model.Skipped) || r.DurationSeconds == nil {
			fmt.Fprintf(b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`,
				class, x+bw/2, y(0)+8, template.HTMLEscapeString(title))
			continue
		}
		h := math.Max(y(0)-y(*r.DurationSeconds), 1)
		fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			class, x, y(0)-h, bw, h, template.HTMLEscapeString(title))
	}
}

// drawMissed marks the missed runs below the axis, placed by time between
// the first and the last run drawn.
func (sc tlScale) drawMissed(b *strings.Builder, runs []Run, missed []time.Time, slot float64) {
	first, last := runs[0].End, runs[len(runs)-1].End
	span := last.Sub(first).Seconds()
	for _, m := range missed {
		pos := 0.5
		if span > 0 {
			pos = min(max(m.Sub(first).Seconds()/span, 0), 1)
		}
		x := tlLeft + pos*(tlWidth-tlLeft-slot) + slot/2
		fmt.Fprintf(b, `<path class="missed" d="M%.1f %.1f l-4 8 h8 z"><title>missed %s</title></path>`,
			x, sc.y(0)+4, m.Format(time.RFC3339))
	}
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
