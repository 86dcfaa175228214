package status

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The run chart of a job's page: its runs on a time axis over the last
// chartPeriods periods, each a bar from its start to its end, as tall as its
// duration, against lines at the period and the timeout.
const (
	// chartPeriods is how many periods the chart spans, ending now.
	chartPeriods = 24
	// chartMinSpan is the span of a chart of a job without a period.
	chartMinSpan = time.Hour
	// chartMinMark is the narrowest a run is drawn, in user units: a
	// one-second run of a daily job stays visible.
	chartMinMark = 4.0
	// chartMaxTicks bounds the labels of the time axis.
	chartMaxTicks = 6
)

// Chart geometry, in SVG user units: the plot spans x from tlLeft to
// tlWidth-tlRight, durations from the axis up, marks and time labels below.
const (
	tlWidth, tlHeight = 720.0, 190.0
	tlLeft, tlRight   = 56.0, 10.0
	tlBottom          = 44.0 // below the axis: the marks' row, the time labels
	tlTop             = 8.0
)

// chartSpan is the span of a job's chart: chartPeriods periods, or for a job
// without a period the span of its recent runs, at least chartMinSpan.
func chartSpan(j Job) time.Duration {
	if j.PeriodSeconds > 0 {
		return time.Duration(j.PeriodSeconds*chartPeriods) * time.Second
	}
	return chartMinSpan
}

// ChartWindow is the span of time a job's run chart shows, ending at now.
func ChartWindow(j Job, now time.Time) (from, to time.Time) {
	return now.Add(-chartSpan(j)), now
}

// chart is one chart being drawn: its window, its vertical scale.
type chart struct {
	b        strings.Builder
	from, to time.Time
	scale    tlScale
}

// x is where t is on the time axis.
func (c *chart) x(t time.Time) float64 {
	span := c.to.Sub(c.from).Seconds()
	pos := min(max(t.Sub(c.from).Seconds()/span, 0), 1)
	return tlLeft + pos*(tlWidth-tlLeft-tlRight)
}

// timeline draws the job's runs of the chart's window on a time axis: a
// silent stretch shows as empty time. Failures, timeouts and lost runs are
// coloured, runs in progress and overlapping runs outlined, skips dotted
// below the axis, and a calendar job's expected runs (slots) marked there as
// ran, skipped or missed; a run overdue is a dashed line where it was due.
func timeline(j Job, slots []Slot, now time.Time) template.HTML {
	c := &chart{}
	c.from, c.to = ChartWindow(j, now)
	runs := chartRuns(j, c.from)
	c.scale = timelineScale(j, runs)
	fmt.Fprintf(&c.b, `<svg class="timeline" viewBox="0 0 %g %g" role="img" aria-label="runs of %s in the last %s">`,
		tlWidth, tlHeight, template.HTMLEscapeString(j.Name), durText(c.to.Sub(c.from).Seconds()))
	c.drawAxes(j)
	c.drawDue(j)
	for _, sl := range slots {
		c.drawSlot(sl)
	}
	for _, r := range runs {
		c.drawRun(r)
	}
	c.b.WriteString(`</svg>`)
	return template.HTML(c.b.String())
}

// chartRun is a run as the chart draws it.
type chartRun struct {
	Run
	start, end time.Time // start is zero for a run without one
	overlapped bool
}

// chartRuns returns the runs that end in the window, oldest first, and the
// runs in progress.
func chartRuns(j Job, from time.Time) []chartRun {
	runs := make([]chartRun, 0, len(j.RecentRuns)+len(j.Running))
	for i := len(j.RecentRuns) - 1; i >= 0; i-- {
		r := j.RecentRuns[i]
		if r.End.Before(from) {
			continue
		}
		cr := chartRun{Run: r, end: r.End, overlapped: r.Overlapped}
		switch {
		case r.Start != nil:
			cr.start = *r.Start
		case r.DurationSeconds != nil:
			cr.start = r.End.Add(-time.Duration(*r.DurationSeconds * float64(time.Second)))
		}
		runs = append(runs, cr)
	}
	for k, r := range j.Running {
		age := r.AgeSeconds
		cr := chartRun{Run: Run{Start: &r.Started, End: r.Started, DurationSeconds: &age, Result: "running", Host: r.Host, PID: r.PID},
			start: r.Started, end: r.Started.Add(time.Duration(age * float64(time.Second)))}
		// A run in progress overlaps one started before it, by the
		// model's rule (overlapping).
		for i := range k {
			if j.Scope == "cluster" || j.Running[i].Host == r.Host {
				cr.overlapped = true
			}
		}
		runs = append(runs, cr)
	}
	return runs
}

// tlScale is a chart's vertical scale: top is the duration at the top of
// the plot, periodAt where the period's line is drawn.
type tlScale struct {
	top, periodAt float64
	offScale      bool // the period is above top
}

func timelineScale(j Job, runs []chartRun) tlScale {
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
	plotH := tlHeight - tlBottom - tlTop
	return tlHeight - tlBottom - plotH*min(sec, sc.top)/sc.top
}

// drawAxes draws the axes, the lines at the period and the timeout, the
// duration scale's labels and the time axis's, as ages ("6h ago", "now").
func (c *chart) drawAxes(j Job) {
	y := c.scale.y
	b := &c.b
	fmt.Fprintf(b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, tlLeft, y(0), tlWidth-tlRight, y(0))
	ref := func(class, label string, at float64) {
		// Labelled at the right: the duration scale's labels are at the
		// left.
		fmt.Fprintf(b, `<line class="%s" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/><text class="label-%s" x="%g" y="%.1f" text-anchor="end">%s</text>`,
			class, tlLeft, y(at), tlWidth-tlRight, y(at), class, tlWidth-tlRight-4, y(at)-3, template.HTMLEscapeString(label))
	}
	if j.PeriodSeconds > 0 {
		label := "period " + durText(j.PeriodSeconds)
		if c.scale.offScale {
			label += " (off scale)"
		}
		ref("period", label, c.scale.periodAt)
	}
	if j.TimeoutSeconds != nil {
		ref("timeout", "timeout "+durText(*j.TimeoutSeconds), *j.TimeoutSeconds)
	}
	fmt.Fprintf(b, `<text class="label-axis" x="2" y="%.1f">0</text><text class="label-axis" x="2" y="%.1f">%s</text>`,
		y(0), tlTop+10, template.HTMLEscapeString(durText(c.scale.top)))
	step := tickStep(c.to.Sub(c.from))
	for k := 0; ; k++ {
		at := c.to.Add(-time.Duration(k) * step)
		x := c.x(at)
		if at.Before(c.from) || x < tlLeft+30 {
			break
		}
		label, anchor := tickLabel(time.Duration(k)*step)+" ago", "middle"
		if k == 0 {
			label, anchor = "now", "end"
		}
		fmt.Fprintf(b, `<line class="tick" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><text class="label-time" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`,
			x, y(0), x, y(0)+4, x, tlHeight-6, anchor, label)
	}
}

// tickSteps are the time axis's steps, the first giving at most
// chartMaxTicks labels chosen.
var tickSteps = []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}

// tickLabel writes an age of the time axis as short as it goes: 30m, 1h,
// 1h30m, 2d.
func tickLabel(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func tickStep(span time.Duration) time.Duration {
	for _, s := range tickSteps {
		if span/s <= chartMaxTicks {
			return s
		}
	}
	return span / chartMaxTicks
}

// drawDue draws a dashed line where the next run was due when it is
// overdue: the silence after it is the job's.
func (c *chart) drawDue(j Job) {
	if j.NextRun == nil || !j.NextRun.Before(c.to) || j.NextRun.Before(c.from) {
		return
	}
	x := c.x(*j.NextRun)
	fmt.Fprintf(&c.b, `<line class="due" x1="%.1f" y1="%g" x2="%.1f" y2="%.1f"><title>due %s</title></line>`,
		x, tlTop, x, c.scale.y(0), j.NextRun.Format(time.RFC3339))
}

// marksY is the middle of the row of marks below the axis.
func (c *chart) marksY() float64 { return c.scale.y(0) + 9 }

// drawSlot marks an expected run below the axis: a tick where one ran, a
// ring where the run skipped, a triangle where none started.
func (c *chart) drawSlot(sl Slot) {
	if sl.At.Before(c.from) || sl.At.After(c.to) {
		return
	}
	x, y := c.x(sl.At), c.marksY()
	at := sl.At.Format(time.RFC3339)
	switch sl.Kind {
	case SlotMissed:
		fmt.Fprintf(&c.b, `<path class="missed" d="M%.1f %.1f l-4 8 h8 z"><title>missed %s</title></path>`, x, y-4, at)
	case SlotSkipped:
		fmt.Fprintf(&c.b, `<circle class="expected skipped" cx="%.1f" cy="%.1f" r="5"><title>expected %s, skipped</title></circle>`, x, y, at)
	default:
		fmt.Fprintf(&c.b, `<line class="expected ran" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>expected %s, ran</title></line>`, x, y-5, x, y+5, at)
	}
}

// drawRun draws a run from its start to its end (at least chartMinMark
// wide), as tall as its duration; a run without a duration, or a skip, is a
// dot below the axis at its end.
func (c *chart) drawRun(r chartRun) {
	y := c.scale.y
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
	if r.overlapped {
		title += ", overlapped"
	}
	class := "run " + r.Result
	if r.overlapped {
		class += " overlapped"
	}
	if r.Result == string(model.Skipped) || r.DurationSeconds == nil || r.start.IsZero() {
		fmt.Fprintf(&c.b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`,
			class, c.x(r.end), c.marksY(), template.HTMLEscapeString(title))
		return
	}
	x0, x1 := c.x(r.start), c.x(r.end)
	if w := x1 - x0; w < chartMinMark {
		// Widened about its middle, kept inside the plot.
		mid := min(max((x0+x1)/2, tlLeft+chartMinMark/2), tlWidth-tlRight-chartMinMark/2)
		x0, x1 = mid-chartMinMark/2, mid+chartMinMark/2
	}
	h := math.Max(y(0)-y(*r.DurationSeconds), chartMinMark)
	fmt.Fprintf(&c.b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
		class, x0, y(0)-h, x1-x0, h, template.HTMLEscapeString(title))
}
