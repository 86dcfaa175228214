package status

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

var rectRE = regexp.MustCompile(`<rect class="([^"]+)" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`)

type bar struct {
	class    string
	x, width float64
}

func bars(t *testing.T, svg string) []bar {
	t.Helper()
	var out []bar
	for _, m := range rectRE.FindAllStringSubmatch(svg, -1) {
		x, err1 := strconv.ParseFloat(m[2], 64)
		w, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("rect %q", m[0])
		}
		out = append(out, bar{m[1], x, w})
	}
	return out
}

func secs(f float64) *float64 { return &f }

// Runs are placed by time over the last chartPeriods periods: a stale
// job's silence is empty time up to now, with a dashed line where the next
// run was due; a one-second run of an hourly job is chartMinMark wide.
func TestTimelineTimeAxis(t *testing.T) {
	start := t0.Add(-5 * time.Hour)
	due := t0.Add(-4 * time.Hour)
	j := Job{Name: "g-stale", PeriodSeconds: 3600, NextRun: &due, RecentRuns: []Run{
		{Start: &start, End: start.Add(time.Second), DurationSeconds: secs(1), Result: "success"},
		{Start: ptr(start.Add(-time.Hour)), End: start.Add(-time.Hour + 30*time.Minute), DurationSeconds: secs(1800), Result: "failure"},
		{End: t0.Add(-25 * time.Hour), DurationSeconds: secs(1), Result: "success"}, // before the window
	}}
	svg := string(timeline(j, nil, t0))
	got := bars(t, svg)
	if len(got) != 2 {
		t.Fatalf("%d bars, want 2 (the run before the window left out):\n%s", len(got), svg)
	}
	plot := tlWidth - tlLeft - tlRight
	xOf := func(at time.Time) float64 { return tlLeft + plot*(1-t0.Sub(at).Hours()/chartPeriods) }
	failure, success := got[0], got[1]
	if failure.class != "run failure" || abs(failure.x-xOf(start.Add(-time.Hour))) > 0.1 || abs(failure.width-plot/chartPeriods/2) > 0.1 {
		t.Errorf("the half-hour failure is %+v, want at x %.1f, %.1f wide", failure, xOf(start.Add(-time.Hour)), plot/chartPeriods/2)
	}
	if success.width != chartMinMark || abs(success.x+success.width/2-xOf(start)) > 0.2 {
		t.Errorf("the one-second run is %+v, want %g wide about x %.1f", success, chartMinMark, xOf(start))
	}
	// Five silent hours: nothing drawn right of the last run but the
	// due line, 4h ago.
	if !strings.Contains(svg, `<line class="due" x1="`+strconv.FormatFloat(xOf(due), 'f', 1, 64)) {
		t.Errorf("no due line at x %.1f:\n%s", xOf(due), svg)
	}
	if !strings.Contains(svg, `text-anchor="end">now</text>`) || !strings.Contains(svg, `>6h ago</text>`) || !strings.Contains(svg, `>18h ago</text>`) {
		t.Errorf("the time axis is not labelled in ages every 6h up to now:\n%s", svg)
	}
	if !strings.Contains(svg, `aria-label="runs of g-stale in the last 24h00m"`) {
		t.Errorf("the chart does not say its span")
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// Runs in progress are drawn up to now, as running (outlined by the CSS);
// the second of two on one host is overlapped, outlined too, as are
// finished runs that overlapped.
func TestTimelineRunningAndOverlapped(t *testing.T) {
	j := Job{Name: "e-overlap", PeriodSeconds: 3600, Scope: "host", Running: []RunningRun{
		{Host: "web1", PID: 5, Started: t0.Add(-80 * time.Minute), AgeSeconds: 4800},
		{Host: "web1", PID: 6, Started: t0.Add(-20 * time.Minute), AgeSeconds: 1200},
		{Host: "web2", PID: 7, Started: t0.Add(-10 * time.Minute), AgeSeconds: 600},
	}, RecentRuns: []Run{{Start: ptr(t0.Add(-3 * time.Hour)), End: t0.Add(-170 * time.Minute), DurationSeconds: secs(600), Result: "success", Overlapped: true}}}
	got := bars(t, string(timeline(j, nil, t0)))
	want := []string{"run success overlapped", "run running", "run running overlapped", "run running"}
	if len(got) != len(want) {
		t.Fatalf("bars %+v, want %v", got, want)
	}
	for i, b := range got {
		if b.class != want[i] {
			t.Errorf("bar %d is %q, want %q", i, b.class, want[i])
		}
	}
	if end := got[1].x + got[1].width; abs(end-(tlWidth-tlRight)) > 0.1 {
		t.Errorf("the run in progress ends at x %.1f, want now (%.1f)", end, tlWidth-tlRight)
	}
	// Cluster scope: any two overlap.
	j.Scope = "cluster"
	if got := bars(t, string(timeline(j, nil, t0))); got[3].class != "run running overlapped" {
		t.Errorf("cluster scope: the run on web2 is %q, want overlapped", got[3].class)
	}
}

// A calendar job's expected runs are marked below the axis: ran, skipped
// (its run declined) or missed; none before its oldest recent run.
func TestExpectedSlots(t *testing.T) {
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	hourly, err := schedule.ParseCron("0 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]model.JobSpec{{Name: "h", Schedule: hourly, Grace: time.Minute, StaleMultiple: 3, Scope: "host"}},
		[]model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/x"}})
	at := func(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.UTC) }
	evs := []model.Event{
		{Time: at(7, 0), Job: "h", Kind: model.Start, Host: "web1", PID: 1}, {Time: at(7, 1), Job: "h", Kind: model.End, Host: "web1", PID: 1, Result: model.Success},
		{Time: at(8, 0), Job: "h", Kind: model.Skip, Host: "web1", Reason: "locked", SkipLabel: "locked"},
		{Time: at(10, 0), Job: "h", Kind: model.Start, Host: "web1", PID: 2}, {Time: at(10, 2), Job: "h", Kind: model.End, Host: "web1", PID: 2, Result: model.Success},
	}
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	tr.SetHealth("runs", true, nil)
	jobs, _ := tr.View()
	got := ExpectedSlots(&jobs[0], t0.Add(-24*time.Hour), t0)
	want := []Slot{{at(7, 0), SlotRan}, {at(8, 0), SlotSkipped}, {at(9, 0), SlotMissed}, {at(10, 0), SlotRan}, {at(11, 0), SlotMissed}}
	if len(got) != len(want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].Kind != want[i].Kind {
			t.Errorf("slot %d is %v, want %v", i, got[i], want[i])
		}
	}
	if m := MissedSlots(&jobs[0], t0); len(m) != 2 || !m[0].Equal(at(9, 0)) || !m[1].Equal(at(11, 0)) {
		t.Errorf("missed slots %v, want 09:00 and 11:00", m)
	}
	h := &Handler{View: tr, Now: func() time.Time { return t0 }}
	_, body := get(t, h, "/status/job/h")
	for class, n := range map[string]int{`class="expected ran"`: 2, `class="expected skipped"`: 1, `class="missed"`: 2} {
		if c := strings.Count(body, class); c != n {
			t.Errorf("the job page has %d %s, want %d", c, class, n)
		}
	}
}
