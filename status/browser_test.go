package status

// The status page as Chromium lays it out (internal/testsupport/chromiumtest): at
// 1280 and 390 px wide, light and dark, for the example config's jobs and
// for 200 jobs. JOBWATCH_SCREENSHOTS=1 saves the screenshots of
// docs/status.md.

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/chromiumtest"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// exampleModel is the example config (jobwatch.yml) as `go run
// ./examples/genlog` leaves it: stats healthy, backup failing, cleanup
// stale, reindex running.
func exampleModel(t *testing.T) *model.Tracker {
	t.Helper()
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	nightly, err := schedule.ParseCron("30 2 * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]model.JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), Timeout: 25 * time.Minute, StaleMultiple: 2, Scope: "host"},
		{Name: "backup", Schedule: nightly, Grace: time.Minute, StaleMultiple: 2, Scope: "cluster"},
		{Name: "cleanup", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "cluster"},
		{Name: "reindex", Schedule: schedule.Every(24 * time.Hour), Timeout: 2 * time.Hour, StaleMultiple: 2, Scope: "host"},
	}, []model.SourceSpec{{Name: "example-runs", Type: "runlog", Identity: "runlog:examples/runs.log"}})
	var evs []model.Event
	run := func(job string, start time.Time, d time.Duration, res model.Result, pid int) {
		evs = append(evs, model.Event{Time: start, Job: job, Kind: model.Start, Host: "web1", PID: pid},
			model.Event{Time: start.Add(d), Job: job, Kind: model.End, Host: "web1", PID: pid, Result: res, HasExitCode: true, ExitCode: map[model.Result]int{model.Failure: 2}[res]})
	}
	for i := 20; i >= 1; i-- {
		run("stats", t0.Add(-time.Duration(i)*time.Hour+50*time.Minute), time.Duration(40+i)*time.Second, model.Success, 100+i)
	}
	run("backup", time.Date(2026, 11, 30, 2, 30, 0, 0, time.UTC), 41*time.Minute, model.Success, 200)
	run("backup", time.Date(2026, 12, 1, 2, 30, 0, 0, time.UTC), 12*time.Minute, model.Failure, 201)
	for i := 8; i >= 5; i-- {
		run("cleanup", t0.Add(-time.Duration(i)*time.Hour), 3*time.Second, model.Success, 300+i)
	}
	run("reindex", t0.Add(-29*time.Hour), 70*time.Minute, model.Success, 400)
	evs = append(evs, model.Event{Time: t0.Add(-5 * time.Minute), Job: "reindex", Kind: model.Start, Host: "web1", PID: 401})
	now = t0.Add(-time.Minute)
	tr.Apply(model.Batch{Source: "example-runs", Events: evs})
	tr.SetHealth("example-runs", true, nil)
	now = t0
	return tr
}

// longName is a 70-character job name, one word.
const longName = "nightly-warehouse-export-to-object-storage-with-checksum-verification1"

// manyJobs is 200 jobs in every state, one with a 70-character name.
func manyJobs(t *testing.T) *model.Tracker {
	t.Helper()
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	var specs []model.JobSpec
	var evs []model.Event
	for i := range 200 {
		name := fmt.Sprintf("job-%03d", i)
		if i == 17 {
			name = longName
		}
		specs = append(specs, model.JobSpec{Name: name, Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "host"})
		ev := func(kind model.Kind, d time.Duration, res model.Result, pid int) {
			evs = append(evs, model.Event{Time: t0.Add(d), Job: name, Kind: kind, Host: "web1", PID: pid, Result: res})
		}
		switch i % 7 {
		case 0: // ok
			ev(model.Start, -20*time.Minute, "", 1)
			ev(model.End, -19*time.Minute, model.Success, 1)
		case 1: // failing
			ev(model.Start, -20*time.Minute, "", 1)
			ev(model.End, -19*time.Minute, model.Failure, 1)
		case 2: // stale
			ev(model.Start, -5*time.Hour, "", 1)
			ev(model.End, -5*time.Hour+time.Minute, model.Success, 1)
		case 3: // running
			ev(model.Start, -3*time.Minute, "", 1)
		case 4: // late
			ev(model.Start, -90*time.Minute, "", 1)
			ev(model.End, -89*time.Minute, model.Success, 1)
		case 5: // overlapping
			ev(model.Start, -70*time.Minute, "", 1)
			ev(model.Start, -10*time.Minute, "", 2)
		}
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/x"}})
	now = t0.Add(-time.Minute)
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	tr.SetHealth("runs", true, nil)
	now = t0
	return tr
}

// pageFacts is what the browser is asked of a page.
type pageFacts struct {
	ScrollWidth, InnerWidth int
	Rows                    []string // data-job=data-state, in order
	// StatesOff: rows whose state badge is not wholly within the viewport.
	StatesOff []string
	// LongTitle: the title attribute or text of the long name's link.
	LongText   string
	Background string
	// MinChartText is the smallest rendered height of the chart's labels.
	MinChartText float64
}

const factsJS = `(() => {
  const de = document.documentElement, out = {ScrollWidth: de.scrollWidth, InnerWidth: window.innerWidth,
    Rows: [], StatesOff: [], LongText: "", Background: getComputedStyle(document.body).backgroundColor, MinChartText: 0};
  for (const tr of document.querySelectorAll("#jobs tr[data-job]")) {
    out.Rows.push(tr.dataset.job + "=" + tr.dataset.state);
    const r = tr.querySelector(".state").getBoundingClientRect();
    if (r.left < 0 || r.right > window.innerWidth || r.width === 0) out.StatesOff.push(tr.dataset.job);
  }
  const long = document.querySelector('#jobs tr[data-job="` + longName + `"] td.name a');
  if (long) out.LongText = long.textContent;
  const hs = [...document.querySelectorAll("svg.timeline text")].map(t => t.getBoundingClientRect().height);
  if (hs.length) out.MinChartText = Math.min(...hs);
  return out;
})()`

func TestPagesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	b := chromiumtest.Start(t)
	shots := os.Getenv("JOBWATCH_SCREENSHOTS") == "1"
	views := []chromiumtest.View{{Width: 1280, Height: 800}, {Width: 1280, Height: 800, Dark: true}, {Width: 390, Height: 844}, {Width: 390, Height: 844, Dark: true}}
	for _, tc := range []struct {
		name  string
		model *model.Tracker
		job   string // the job page to check
	}{
		{"example", exampleModel(t), "stats"},
		{"200-jobs", manyJobs(t), longName},
	} {
		h := &Handler{View: tc.model, Now: func() time.Time { return t0 }}
		srv := httptest.NewServer(h)
		jobs, srcs := tc.model.View()
		want := orderedRows(Build(jobs, srcs, t0))
		for _, v := range views {
			t.Run(tc.name+"/"+v.String(), func(t *testing.T) {
				b.Load(srv.URL+"/status", v)
				var f pageFacts
				b.Eval(factsJS, &f)
				checkFacts(t, "/status", v, f)
				if !slices.Equal(f.Rows, want) {
					t.Errorf("the page's rows (%d) are not every job, most urgent first:\n%v\nwant\n%v", len(f.Rows), f.Rows, want)
				}
				if len(f.StatesOff) > 0 {
					t.Errorf("state badges outside the viewport without scrolling: %v", f.StatesOff)
				}
				if tc.name == "200-jobs" && f.LongText != longName {
					t.Errorf("the 70-character name reads %q", f.LongText)
				}
				if shots && tc.name == "example" && v.Width == 1280 && !v.Dark {
					save(t, "status-index.png", b.Screenshot(800))
				}

				b.Load(srv.URL+"/status/job/"+tc.job, v)
				b.Eval(factsJS, &f)
				checkFacts(t, "/status/job/"+tc.job, v, f)
				// 9 px: the labels of the chart, scaled down to a phone's
				// width, stay readable.
				if f.MinChartText < 9 {
					t.Errorf("the chart's smallest label is %.1f px high, want ≥ 9", f.MinChartText)
				}
				if shots && tc.name == "example" && v.Width == 390 && v.Dark {
					save(t, "status-job-phone-dark.png", b.Screenshot(1100))
				}
			})
		}
		srv.Close()
	}
}

// checkFacts checks what every page must: no sideways scrolling, the
// scheme's background.
func checkFacts(t *testing.T, page string, v chromiumtest.View, f pageFacts) {
	t.Helper()
	if f.InnerWidth != v.Width {
		t.Fatalf("%s: the viewport is %d px wide, want %d", page, f.InnerWidth, v.Width)
	}
	if f.ScrollWidth > f.InnerWidth {
		t.Errorf("%s: the page is %d px wide in a %d px viewport: it scrolls sideways", page, f.ScrollWidth, f.InnerWidth)
	}
	bg := "rgb(255, 255, 255)"
	if v.Dark {
		bg = "rgb(13, 17, 23)"
	}
	if f.Background != bg {
		t.Errorf("%s: background %s, want %s", page, f.Background, bg)
	}
}

// orderedRows is the index's rows as they must be: every job, by state
// (States' order), then by name.
func orderedRows(rep Report) []string {
	jobs := slices.Clone(rep.Jobs)
	slices.SortFunc(jobs, func(a, b Job) int {
		if a.State != b.State {
			return slices.Index(States, a.State) - slices.Index(States, b.State)
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Name + "=" + j.State
	}
	return out
}

func save(t *testing.T, name string, png []byte) {
	t.Helper()
	path := filepath.Join("..", "docs", "img", name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s (%d bytes)", path, len(png))
}
