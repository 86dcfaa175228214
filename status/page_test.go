package status

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// everyState is a model with a job in each state, named so that the
// alphabetical order is not the order of urgency, and a source that read
// an unreadable line.
func everyState(t *testing.T) *model.Tracker {
	t.Helper()
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	spec := func(name string) model.JobSpec {
		return model.JobSpec{Name: name, Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "host"}
	}
	specs := []model.JobSpec{spec("a-ok"), spec("b-never"), spec("c-running"), spec("d-late"), spec("e-overlap"), spec("f-failing"), spec("g-stale"), spec("h-stale"), spec("j-paused")}
	// Labels: two teams, one owner, and jobs without any.
	specs[0].Labels = map[string]string{"team": "platform"}
	specs[5].Labels = map[string]string{"team": "payments", "owner": "alice"}
	specs[5].AlertAfter = model.AlertAfter{Failures: 3}
	specs[6].Labels = map[string]string{"team": "payments"}
	gone := spec("i-retired")
	gone.Discovered = true
	srcs := []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/x"}}
	tr.Configure(append(specs, gone), srcs)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ev := func(job string, kind model.Kind, d time.Duration, res model.Result, host string, pid int) model.Event {
		return model.Event{Time: at(d), Job: job, Kind: kind, Host: host, PID: pid, Result: res}
	}
	evs := []model.Event{
		ev("a-ok", model.Start, -10*time.Minute, "", "web1", 1), ev("a-ok", model.End, -9*time.Minute, model.Success, "web1", 1),
		ev("c-running", model.Start, -70*time.Minute, "", "web1", 2), ev("c-running", model.End, -69*time.Minute, model.Success, "web1", 2),
		ev("c-running", model.Start, -2*time.Minute, "", "web1", 3),
		ev("d-late", model.Start, -90*time.Minute, "", "web1", 4), ev("d-late", model.End, -89*time.Minute, model.Success, "web1", 4),
		ev("e-overlap", model.Start, -80*time.Minute, "", "web1", 5), ev("e-overlap", model.Start, -20*time.Minute, "", "web1", 6),
		ev("f-failing", model.Start, -30*time.Minute, "", "web1", 7), ev("f-failing", model.End, -29*time.Minute, model.Failure, "web1", 7),
		ev("g-stale", model.Start, -5*time.Hour, "", "web1", 8), ev("g-stale", model.End, -5*time.Hour+time.Second, model.Success, "web1", 8),
		ev("h-stale", model.Start, -6*time.Hour, "", "web1", 9), ev("h-stale", model.End, -6*time.Hour+time.Second, model.Success, "web1", 9),
	}
	now = t0.Add(-time.Minute)
	tr.Apply(model.Batch{Source: "runs", Events: evs, ParseErrors: 1})
	tr.SetHealth("runs", true, nil)
	// i-retired, found by host mode, failed twice and has gone from the
	// host: retired, neither failing nor stale.
	tr.Apply(model.Batch{Source: "runs", Events: []model.Event{
		ev("i-retired", model.End, -8*time.Hour, model.Failure, "web1", 10), ev("i-retired", model.End, -7*time.Hour, model.Failure, "web1", 11),
	}})
	now = t0.Add(-30 * time.Second)
	tr.Configure(specs, srcs)
	now = t0
	if _, err := tr.Pause("j-paused", model.Pause{Until: t0.Add(2 * time.Hour), Reason: "db upgrade"}); err != nil {
		t.Fatal(err)
	}
	return tr
}

func get(t *testing.T, h *Handler, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w.Code, w.Body.String()
}

var rowRE = regexp.MustCompile(`<tr data-job="([^"]+)" data-state="([^"]+)"`)

// rows returns the jobs of a page's table, in order, as name=state.
func rows(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+"="+m[2])
	}
	return out
}

// The index lists the most urgent jobs first, then by name; its counts are
// links to the index filtered to a state, which the handler checks.
func TestIndexOrderAndFilter(t *testing.T) {
	h := &Handler{View: everyState(t), Now: func() time.Time { return t0 }}
	code, body := get(t, h, "/status")
	if code != 200 {
		t.Fatalf("/status: %d", code)
	}
	want := "g-stale=stale h-stale=stale f-failing=failing e-overlap=overlapping d-late=late c-running=running a-ok=ok b-never=never_seen j-paused=paused i-retired=retired"
	if got := strings.Join(rows(body), " "); got != want {
		t.Errorf("rows in the order\n%s\nwant\n%s", got, want)
	}
	for _, s := range States {
		if !strings.Contains(body, `<a href="/status?state=`+s+`">`) {
			t.Errorf("the counts have no link to ?state=%s", s)
		}
	}
	if !strings.Contains(body, `<b class="state stale">stale</b> 2</a>`) || !strings.Contains(body, `<b class="state never_seen">never seen</b> 1</a>`) {
		t.Errorf("the counts do not say 2 stale and 1 never seen")
	}
	golden(t, "index-every-state.html", []byte(body))

	code, body = get(t, h, "/status?state=stale")
	if got := strings.Join(rows(body), " "); code != 200 || got != "g-stale=stale h-stale=stale" {
		t.Errorf("?state=stale: %d, rows %s", code, got)
	}
	if !strings.Contains(body, `<a href="/status?state=stale" aria-current="page">`) || !strings.Contains(body, `<a href="/status">all 10</a>`) {
		t.Errorf("?state=stale does not mark its count current or link back to all jobs")
	}
	// A state with no job: its count is shown, at 0, and says so.
	h2 := &Handler{View: fixture(t), Now: func() time.Time { return t0 }}
	if code, body := get(t, h2, "/status?state=overlapping"); code != 200 || len(rows(body)) != 0 || !strings.Contains(body, "no overlapping jobs") {
		t.Errorf("?state=overlapping with none: %d, rows %v", code, rows(body))
	}
	for _, bad := range []string{"bogus", "STALE", "<script>"} {
		code, body := get(t, h, "/status?state="+strings.ReplaceAll(bad, "<", "%3C"))
		if code != 400 || !strings.Contains(body, "one of stale, failing, overlapping, late, running, ok, never_seen") {
			t.Errorf("?state=%s: %d %q, want 400 naming the states", bad, code, body)
		}
	}
}

// The page's words: an overdue run is "overdue 53m", counts agree with
// their numbers, a source with unreadable lines is not plain "up".
func TestPageWords(t *testing.T) {
	h := &Handler{View: everyState(t), Now: func() time.Time { return t0 }}
	_, body := get(t, h, "/status")
	for _, want := range []string{
		`<td data-label="next run" title="2026-12-01T11:30:00Z">overdue 30m</td>`, // d-late: due an hour after 10:30
		`<span class="degraded">up, 1 line unreadable</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	if strings.Contains(body, " ago</td>") && regexp.MustCompile(`data-label="next run"[^>]*>[^<]* ago<`).MatchString(body) {
		t.Errorf("a next run reads \"... ago\", not \"overdue ...\"")
	}
	_, body = get(t, h, "/status/job/e-overlap")
	for _, want := range []string{" · 1 overlap · ", "next run in 40m00s"} {
		if !strings.Contains(body, want) {
			t.Errorf("/status/job/e-overlap lacks %q", want)
		}
	}
	_, body = get(t, h, "/status/job/a-ok")
	if !strings.Contains(body, " · 0 overlaps · ") || !strings.Contains(body, "<h2>Last 1 run</h2>") {
		t.Errorf("/status/job/a-ok: plurals wrong")
	}
	for _, tc := range []struct {
		n    any
		noun string
		want string
	}{{0, "run", "0 runs"}, {1, "run", "1 run"}, {uint64(2), "overlap", "2 overlaps"}, {1, "entry|entries", "1 entry"}, {3, "entry|entries", "3 entries"}} {
		if got := plural(tc.n, tc.noun); got != tc.want {
			t.Errorf("plural(%v, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
	for sec, want := range map[float64]string{45: "45s", 53*60 + 45: "53m", 2*3600 + 5*60 + 30: "2h05m", 3*86400 + 4*3600: "3d04h"} {
		if got := durCoarse(sec); got != want {
			t.Errorf("durCoarse(%v) = %q, want %q", sec, got, want)
		}
	}
}

// cssVars returns the custom properties of the page's light :root and of
// its dark scheme's.
func cssVars(t *testing.T) (light, dark map[string]string) {
	t.Helper()
	b, err := pageFS.ReadFile("page.html.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	decls := func(block string) map[string]string {
		m := map[string]string{}
		for _, d := range regexp.MustCompile(`--([a-z_-]+):\s*(#[0-9a-fA-F]{3,6})`).FindAllStringSubmatch(block, -1) {
			m[d[1]] = d[2]
		}
		return m
	}
	root := regexp.MustCompile(`(?s)\n:root\{(.*?)\}`).FindStringSubmatch(css)
	darkRoot := regexp.MustCompile(`(?s)@media \(prefers-color-scheme:\s*dark\)\s*\{:root\{(.*?)\}\}`).FindStringSubmatch(css)
	if root == nil || darkRoot == nil {
		t.Fatal("the page has no :root colours, or no dark scheme's")
	}
	light = decls(root[1])
	dark = map[string]string{}
	for k, v := range light {
		dark[k] = v
	}
	for k, v := range decls(darkRoot[1]) {
		dark[k] = v
	}
	return light, dark
}

func parseHex(t *testing.T, s string) [3]float64 {
	t.Helper()
	s = strings.TrimPrefix(s, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	var c [3]float64
	for i := range c {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", s, err)
		}
		c[i] = float64(v) / 255
	}
	return c
}

// luminance is WCAG 2's relative luminance.
func luminance(c [3]float64) float64 {
	var l [3]float64
	for i, v := range c {
		if v <= 0.04045 {
			l[i] = v / 12.92
		} else {
			l[i] = math.Pow((v+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

func contrast(a, b [3]float64) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// The state badges' text is readable on each state's colour (WCAG AA,
// 4.5:1) in the light scheme and the dark, the states' colours differ from
// each other, and the page's text is readable on its background.
func TestStateColours(t *testing.T) {
	light, dark := cssVars(t)
	b, _ := pageFS.ReadFile("page.html.tmpl")
	for _, s := range States {
		if !strings.Contains(string(b), fmt.Sprintf(".state.%s{background:var(--%s)}", s, s)) {
			t.Errorf("the badge of %s is not coloured with var(--%s)", s, s)
		}
	}
	for scheme, vars := range map[string]map[string]string{"light": light, "dark": dark} {
		on := parseHex(t, vars["on-state"])
		for i, s := range States {
			bg := parseHex(t, vars[s])
			if c := contrast(on, bg); c < 4.5 {
				t.Errorf("%s scheme: badge text %s on %s (%s) has contrast %.2f, want ≥ 4.5", scheme, vars["on-state"], s, vars[s], c)
			}
			for _, o := range States[i+1:] {
				if d := colourDistance(bg, parseHex(t, vars[o])); d < 0.1 {
					t.Errorf("%s scheme: %s (%s) and %s (%s) are hard to tell apart (distance %.2f)", scheme, s, vars[s], o, vars[o], d)
				}
			}
		}
		for _, fg := range []string{"fg", "mute", "link", "ok", "failing", "late", "unknown"} {
			if c := contrast(parseHex(t, vars[fg]), parseHex(t, vars["bg"])); c < 4.5 {
				t.Errorf("%s scheme: text in --%s (%s) on the background (%s) has contrast %.2f, want ≥ 4.5", scheme, fg, vars[fg], vars["bg"], c)
			}
		}
	}
}

// colourDistance is the Euclidean distance of two sRGB colours, 0 to √3.
func colourDistance(a, b [3]float64) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}

// A retired job is in the report with when it was retired, and jobwatch
// check finds nothing wrong with it, though its last runs failed.
func TestRetiredJob(t *testing.T) {
	jobs, srcs := everyState(t).View()
	rep := Build(jobs, srcs, t0)
	i := slices.IndexFunc(rep.Jobs, func(j Job) bool { return j.Name == "i-retired" })
	if i < 0 {
		t.Fatal("no i-retired in the report")
	}
	j := rep.Jobs[i]
	if j.State != StateRetired || j.RetiredSince == nil || j.RetiredSince.Sub(t0).Abs() > time.Second || j.ConsecutiveFailures != 2 || j.Runs["failure"] != 2 {
		t.Errorf("retired job %+v, want state retired since %v with its two failures kept", j, t0)
	}
	if code, out := Check(j, CheckOptions{}); code != CheckOK || !strings.Contains(out, "retired since 2026-12-01T12:00:00Z") {
		t.Errorf("check of a retired job: %d %q, want OK, retired", code, out)
	}
	h := &Handler{View: everyState(t), Now: func() time.Time { return t0 }}
	if code, body := get(t, h, "/status/job/i-retired"); code != 200 || !strings.Contains(body, `<p id="retired">Retired`) {
		t.Errorf("/status/job/i-retired: %d, no word of its retirement:\n%s", code, body)
	}
}

// ?label=NAME=VALUE (repeatable) lists the jobs with each label, on the
// page and in the API; the page's label counts link there.
func TestLabelFilter(t *testing.T) {
	h := &Handler{View: everyState(t), Now: func() time.Time { return t0 }}
	for _, tc := range []struct{ path, want string }{
		{"/status?label=team%3Dpayments", "g-stale=stale f-failing=failing"},
		{"/status?label=team%3Dpayments&label=owner%3Dalice", "f-failing=failing"},
		{"/status?label=team%3Dpayments&state=stale", "g-stale=stale"},
		{"/status?label=team%3Dnobody", ""},
	} {
		code, body := get(t, h, tc.path)
		if got := strings.Join(rows(body), " "); code != 200 || got != tc.want {
			t.Errorf("%s: %d, rows %q, want %q", tc.path, code, got, tc.want)
		}
	}
	_, body := get(t, h, "/status?label=team%3Dpayments")
	for _, want := range []string{
		`<a href="/status?label=team%3Dpayments" aria-current="page"><code>team=payments</code> 2</a>`,
		`<a href="/status?label=team%3Dplatform"><code>team=platform</code> 1</a>`,
		`<a href="/status?label=owner%3Dalice"><code>owner=alice</code> 1</a>`,
		`<a href="/status?label=team%3Dpayments&amp;state=stale">`,
		`<a href="/status">any labels</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("?label=team=payments has no %s", want)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"label=team%3Dpayments", "f-failing g-stale"},
		{"label=team%3D", "b-never c-running d-late e-overlap h-stale i-retired j-paused"},
		{"label=owner%3Dalice&label=team%3Dpayments", "f-failing"},
	} {
		code, body := get(t, h, "/api/v1/jobs?"+tc.query)
		var rep Report
		if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil {
			t.Fatalf("%s: %d %v", tc.query, code, err)
		}
		var names []string
		for _, j := range rep.Jobs {
			names = append(names, j.Name)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("/api/v1/jobs?%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	for _, path := range []string{"/status?label=team", "/api/v1/jobs?label=%3Dpayments"} {
		if code, body := get(t, h, path); code != 400 || !strings.Contains(body, "want NAME=VALUE") {
			t.Errorf("%s: %d %s, want 400 naming NAME=VALUE", path, code, body)
		}
	}
}
