package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fixture is a model with one job in each state, built by applying events,
// as the sources would.
func fixture(t *testing.T) *model.Tracker {
	t.Helper()
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	hourly, err := schedule.ParseCron("0 * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]model.JobSpec{
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: time.Hour, StaleMultiple: 2, Scope: "host",
			Labels: map[string]string{"team": "platform", "owner": "alice"}, AlertAfter: model.AlertAfter{Failures: 3, Skips: 5}},
		{Name: "cleanup", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "host"},
		{Name: "report", Schedule: hourly, Grace: time.Minute, StaleMultiple: 3, Scope: "cluster"},
		{Name: "stats", Schedule: schedule.Every(10 * time.Minute), Timeout: 5 * time.Minute, StaleMultiple: 2, Scope: "host"},
		{Name: "fresh", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "host"},
	}, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/x"}})
	ev := func(job string, kind model.Kind, at time.Duration, res model.Result, pid int) model.Event {
		e := model.Event{Time: t0.Add(at), Job: job, Kind: kind, Host: "web1", PID: pid, Result: res}
		if kind == model.End {
			e.HasExitCode, e.ExitCode = true, map[model.Result]int{model.Failure: 2}[res]
		}
		return e
	}
	var evs []model.Event
	// backup: a day-old success, then two failures, the last with output.
	evs = append(evs, ev("backup", model.Start, -31*time.Hour, "", 10), ev("backup", model.End, -30*time.Hour, model.Success, 10))
	evs = append(evs, ev("backup", model.Start, -26*time.Hour, "", 11), ev("backup", model.End, -25*time.Hour, model.Failure, 11))
	fail := ev("backup", model.End, -89*time.Minute, model.Failure, 12)
	fail.Output = "rsync: write failed: No space left on device <script>alert(1)</script>\n"
	evs = append(evs, ev("backup", model.Start, -2*time.Hour, "", 12), fail)
	// stats: runs every 10 minutes, getting slower, one running now, one skip.
	for i := 6; i >= 1; i-- {
		at := -time.Duration(i) * 10 * time.Minute
		evs = append(evs, ev("stats", model.Start, at, "", 100+i), ev("stats", model.End, at+time.Duration(7-i)*40*time.Second, model.Success, 100+i))
	}
	evs = append(evs, model.Event{Time: t0.Add(-5 * time.Minute), Job: "stats", Kind: model.Skip, Host: "web1", Reason: "locked", SkipLabel: "locked"})
	running := ev("stats", model.Start, -2*time.Minute, "", 200)
	running.LockTTL = 90 * time.Second // jobwatch run --lock-redis --lock-ttl 90s
	evs = append(evs, running)
	// cleanup: succeeded three hours ago: stale.
	evs = append(evs, ev("cleanup", model.Start, -3*time.Hour, "", 300), ev("cleanup", model.End, -3*time.Hour+time.Second, model.Success, 300))
	// report: hourly, ran at 09:00, missed 10:00 and 11:00: late, not yet
	// stale (3 periods).
	evs = append(evs, ev("report", model.Start, -3*time.Hour, "", 400), ev("report", model.End, -3*time.Hour+time.Minute, model.Success, 400))
	now = t0.Add(-time.Minute)
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	now = t0
	return tr
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", name, got)
	}
}

func TestReportStates(t *testing.T) {
	tr := fixture(t)
	jobs, srcs := tr.View()
	rep := Build(jobs, srcs, t0)
	states := map[string]string{}
	for _, j := range rep.Jobs {
		states[j.Name] = j.State
	}
	want := map[string]string{"backup": StateFailing, "cleanup": StateStale, "fresh": StateNeverSeen, "report": StateLate, "stats": StateRunning}
	for name, s := range want {
		if states[name] != s {
			t.Errorf("%s is %q, want %q", name, states[name], s)
		}
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", append(b, '\n'))
}

func TestPages(t *testing.T) {
	h := &Handler{View: fixture(t), Now: func() time.Time { return t0 }, Page: PageOptions{Title: "jobwatch on web1"}}
	get := func(path string) (int, string, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w.Code, w.Header().Get("Content-Type"), w.Body.String()
	}
	code, typ, body := get("/status")
	if code != 200 || !strings.HasPrefix(typ, "text/html") {
		t.Fatalf("/status: %d %s", code, typ)
	}
	for _, want := range []string{`data-job="cleanup" data-state="stale"`, `data-job="stats" data-state="running"`, `web1 pid 200 · 2m00s`, `data-source="runs"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	golden(t, "index.html", []byte(body))

	_, _, body = get("/status/job/backup")
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("a job's output is not escaped on its page")
	}
	if !strings.Contains(body, `id="output">rsync: write failed`) {
		t.Error("the last failure's output is not shown")
	}
	golden(t, "job-backup.html", []byte(body))

	_, _, body = get("/status/job/stats")
	golden(t, "job-stats.html", []byte(body))
	if n := strings.Count(body, `<rect class="run success`); n != 6 {
		t.Errorf("stats timeline has %d success bars, want 6", n)
	}
	if !strings.Contains(body, `<circle class="run skipped"`) || !strings.Contains(body, `class="timeout"`) || !strings.Contains(body, `class="period"`) {
		t.Error("stats timeline lacks the skip mark or the period and timeout lines")
	}
	_, _, body = get("/status/job/report")
	if n := strings.Count(body, `class="missed"`); n != 2 {
		t.Errorf("report timeline marks %d missed runs, want 2 (10:00, 11:00)", n)
	}

	if code, typ, body := get("/api/v1/jobs/stats"); code != 200 || typ != "application/json" || !strings.Contains(body, `"state": "running"`) {
		t.Errorf("/api/v1/jobs/stats: %d %s %s", code, typ, body)
	}
	for _, p := range []string{"/status/job/nosuch", "/api/v1/jobs/nosuch", "/nothing"} {
		if code, _, _ := get(p); code != 404 {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/status", nil))
	if w.Code != 405 {
		t.Errorf("POST /status: %d", w.Code)
	}
}

// A job whose source is down says on its page how far behind its verdicts
// are, and the report says it too.
func TestPageSaysDecisionsWait(t *testing.T) {
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }})
	tr.Configure([]model.JobSpec{{Name: "j", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}},
		[]model.SourceSpec{{Name: "db", Type: "mysql", Runs: true, LateWindow: time.Minute}})
	tr.Apply(model.Batch{Source: "db", AtEnd: true, Events: []model.Event{{Kind: model.End, Job: "j", Host: "h", Time: now.Add(-time.Hour), Result: model.Success}}})
	tr.SetHealth("db", false, errors.New("no journal files in /var/log/journal"))
	now = now.Add(2 * time.Hour)
	h := &Handler{View: tr, Now: func() time.Time { return now }}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/status/job/j", nil))
	if body := w.Body.String(); !strings.Contains(body, `<p id="behind">Decided up to 2h01m ago`) {
		t.Errorf("no word of the decisions waiting on the job page:\n%s", body)
	}
	jobs, srcs := tr.View()
	if rep := Build(jobs, srcs, now); rep.Jobs[0].DecisionsBehindSeconds != 7260 {
		t.Errorf("decisions behind %v s, want 7260", rep.Jobs[0].DecisionsBehindSeconds)
	} else if s := rep.Sources[0]; s.Up || s.Reason != "no journal files in /var/log/journal" {
		t.Errorf("source %+v, want down with its reason", s)
	}
	// The status page says why the source is down.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	if body := w.Body.String(); !strings.Contains(body, `<span class="down">down</span>: no journal files in /var/log/journal`) {
		t.Errorf("the status page does not say why the source is down:\n%s", body)
	}
}

// A run's result is a fact: the state and `jobwatch check` show it the
// moment its record is read, while its source's records are still held for
// the watermark; the failures in a row, a verdict, wait for the watermark.
func TestFailingIsAFact(t *testing.T) {
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{{Name: "j", Schedule: schedule.Every(time.Hour), StaleMultiple: 3, Scope: "host"}},
		[]model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/x", Runs: true, LateWindow: time.Minute}})
	pid := 0
	// run is a run of a second ending at now+at: its start and its end.
	run := func(at time.Duration, res model.Result) []model.Event {
		pid++
		return []model.Event{{Time: now.Add(at - time.Second), Job: "j", Kind: model.Start, Host: "web1", PID: pid},
			{Time: now.Add(at), Job: "j", Kind: model.End, Host: "web1", PID: pid, Result: res}}
	}
	report := func() Job {
		t.Helper()
		jobs, srcs := tr.View()
		shown := []model.JobView{*jobs[0].Shown()} // as the saved state hands them out
		return Build(shown, srcs, now).Jobs[0]
	}
	type want struct {
		state, check string
		held         int
		code         int
	}
	step := func(name string, evs []model.Event, w want) {
		t.Helper()
		if len(evs) > 0 {
			tr.Apply(model.Batch{Source: "runs", Events: evs})
		}
		j := report()
		code, line := Check(j, CheckOptions{})
		if j.State != w.state || j.HeldEnds != w.held || code != w.code || !strings.HasPrefix(line, w.check) {
			t.Errorf("%s: state %q, %d ends held, check %d %q\nwant state %q, %d held, check %d %q...", name, j.State, j.HeldEnds, code, line, w.state, w.held, w.code, w.check)
		}
	}
	// Two failures read to the source's end, past its late window:
	// decided, two in a row.
	tr.Apply(model.Batch{Source: "runs", AtEnd: true, Events: slices.Concat(run(-3*time.Hour, model.Success), run(-2*time.Hour, model.Failure), run(-time.Hour, model.Failure))})
	step("two decided failures", nil, want{StateFailing, "JOBWATCH CRITICAL - j: failing: 2 runs in a row failed", 0, CheckCritical})
	// A success stamped now, held for the late window: the job is no
	// longer failing, though its failures in a row are still 2.
	step("a live success", run(0, model.Success), want{StateOK, "JOBWATCH OK - j: ok", 1, CheckOK})
	if j := report(); j.ConsecutiveFailures != 2 || j.Runs["success"] != 2 {
		t.Errorf("consecutive failures %d, successes %d; want the verdict 2 and the fact 2", j.ConsecutiveFailures, j.Runs["success"])
	}
	// A failure stamped a second later: failing at once, a warning only,
	// since the runs in a row before it are not decided.
	now = now.Add(time.Second)
	step("a live failure", run(0, model.Failure), want{StateFailing, "JOBWATCH WARNING - j: the last run failed", 2, CheckWarning})
	// The watermark passes both: one failure in a row, decided.
	now = now.Add(2 * time.Minute)
	step("decided", run(-10*time.Second, model.Failure), want{StateFailing, "JOBWATCH WARNING - j: the last run failed", 1, CheckWarning})
	now = now.Add(2 * time.Minute)
	tr.Apply(model.Batch{Source: "runs", AtEnd: true})
	step("all decided", nil, want{StateFailing, "JOBWATCH CRITICAL - j: failing: 2 runs in a row failed", 0, CheckCritical})
}
