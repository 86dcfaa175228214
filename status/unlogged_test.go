package status

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// A cron job at -L 1 (its runs end with result unknown) is ok, not stale
// or failing, and the status page, the JSON report, `jobwatch status` and
// `jobwatch check` say that its results are not logged and how to log
// them; a job whose latest run succeeded says nothing.
func TestResultsUnloggedNote(t *testing.T) {
	now := t0
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now },
		Alive: func(pid int) bool { return pid == 0 }})
	tr.Configure([]model.JobSpec{
		{Name: "cronjob", Schedule: schedule.Every(time.Minute), StaleMultiple: 2},
		{Name: "logged", Schedule: schedule.Every(time.Minute), StaleMultiple: 2},
	}, []model.SourceSpec{{Name: "journal", Type: "journal", Runs: true}})
	tr.SetHealth("journal", true, nil)
	var evs []model.Event
	for i := range 3 {
		at := now.Add(time.Duration(i-2) * time.Minute)
		evs = append(evs, model.Event{Kind: model.Start, Job: "cronjob", Host: "here", PID: 100 + i, Time: at, EndUnlogged: true},
			model.Event{Kind: model.Start, Job: "logged", Host: "here", PID: 200 + i, Time: at},
			model.Event{Kind: model.End, Job: "logged", Host: "here", PID: 200 + i, Time: at.Add(time.Second), Result: model.Success})
	}
	tr.Apply(model.Batch{Source: "journal", AtEnd: true, Events: evs})
	for range 2 { // seen gone, then gone for longer than model.DefaultLostAfter
		tr.Reap()
		now = now.Add(10 * time.Second)
	}
	jobs, srcs := tr.View()
	rep := Build(jobs, srcs, now)
	byName := map[string]Job{}
	for _, j := range rep.Jobs {
		byName[j.Name] = j
	}
	c := byName["cronjob"]
	if c.State != StateOK || c.Note != ResultsUnloggedNote || c.Runs["unknown"] != 3 || c.ConsecutiveFailures != 0 {
		t.Errorf("cronjob: state %s, note %q, runs %v, %d failures in a row", c.State, c.Note, c.Runs, c.ConsecutiveFailures)
	}
	if n := byName["logged"].Note; n != "" {
		t.Errorf("logged: note %q", n)
	}
	if code, line := Check(c, CheckOptions{}); code != CheckOK || !strings.Contains(line, "OK - cronjob: ok; "+ResultsUnloggedNote) {
		t.Errorf("jobwatch check: %d %q, want OK with the note", code, line)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rep, false); err != nil {
		t.Fatal(err)
	}
	if want := "cronjob: " + ResultsUnloggedNote + "\n"; !strings.HasSuffix(table.String(), want) || strings.Count(table.String(), "not logged") != 1 {
		t.Errorf("jobwatch status does not say it once:\n%s", table.String())
	}
	h := &Handler{View: tr, Now: func() time.Time { return now }}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	if body := w.Body.String(); !strings.Contains(body, `results are not logged: set EXTRA_OPTS=&#34;-L 15&#34; in /etc/default/cron`) {
		t.Errorf("the status page does not say it:\n%s", body)
	}
	// The job's page says it, counts the runs, and draws them in their own colour.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/status/job/cronjob", nil))
	body := w.Body.String()
	for _, want := range []string{`<p id="note">results are not logged`, `3 of unknown result`, `<span class="unknown">■ unknown</span>`, `class="run unknown"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the job's page lacks %q:\n%s", want, body)
		}
	}
}
