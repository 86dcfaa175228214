package collector

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// samples are the sample lines of a text exposition, by series.
func samples(t *testing.T, body []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(strings.TrimSpace(line[sp+1:]), 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[line[:sp]] = v
	}
	return out
}

// Times are written in whole seconds, the same through the Collector and
// the Handler: what happened at the second it happened in, what is due
// at the first whole second not before it, and the seconds since the
// last success the scrape's second less its timestamp.
func TestTimesInWholeSeconds(t *testing.T) {
	frac := func(d time.Duration, ms int) time.Duration { return d + time.Duration(ms)*time.Millisecond }
	now := t0.Add(frac(2*time.Hour, 700))
	clock := func() time.Time { return now }
	cron, err := schedule.ParseCron("15 3 * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: clock, Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{
		{Name: "every", Schedule: schedule.Every(time.Hour), Grace: frac(0, 100), StaleMultiple: 1},
		{Name: "nightly", Schedule: cron, StaleMultiple: 1},
	}, []model.SourceSpec{{Name: "log", Type: "runlog"}})
	tr.Apply(model.Batch{Source: "log", Events: []model.Event{
		{Kind: model.Start, Job: "every", Host: "h", PID: 1, Time: t0.Add(frac(0, 200))},
		{Kind: model.End, Job: "every", Host: "h", PID: 1, Time: t0.Add(frac(time.Minute, 300)), Result: model.Success},
		{Kind: model.Start, Job: "every", Host: "h", PID: 2, Time: t0.Add(frac(time.Hour, 400))},
		{Kind: model.End, Job: "every", Host: "h", PID: 2, Time: t0.Add(frac(time.Hour+time.Minute, 500)), Result: model.Failure},
		{Kind: model.Start, Job: "every", Host: "h", PID: 3, Time: t0.Add(frac(2*time.Hour, 600))},
		{Kind: model.End, Job: "nightly", Host: "h", PID: 4, Time: t0.Add(frac(-time.Hour, 900)), Result: model.Success},
	}})
	saved := savedOf(tr)
	old, cur := servers(func() *model.Saved { return saved }, clock)
	sec := func(d time.Duration) float64 { return float64(t0.Add(d).Unix()) }
	view := func(name string) *model.JobView { return saved.Job(name).Shown() }
	every, nightly := view("every").Watch(now), view("nightly").Watch(now)
	want := map[string]float64{
		`jobwatch_job_last_success_timestamp_seconds{job_name="every"}`:               sec(time.Minute),
		`jobwatch_job_last_failure_timestamp_seconds{job_name="every"}`:               sec(time.Hour + time.Minute),
		`jobwatch_job_run_start_timestamp_seconds{host="h",job_name="every",pid="3"}`: sec(2 * time.Hour),
		`jobwatch_job_seconds_since_last_success{job_name="every"}`:                   sec(2*time.Hour) - sec(time.Minute),
		`jobwatch_job_deadline_timestamp_seconds{job_name="every"}`:                   math.Ceil(unixExact(every.Deadline)),
		`jobwatch_job_next_run_timestamp_seconds{job_name="every"}`:                   math.Ceil(unixExact(every.NextRun)),
		`jobwatch_job_last_success_timestamp_seconds{job_name="nightly"}`:             sec(-time.Hour),
		`jobwatch_job_seconds_since_last_success{job_name="nightly"}`:                 sec(2*time.Hour) - sec(-time.Hour),
		`jobwatch_job_next_run_timestamp_seconds{job_name="nightly"}`:                 unixExact(nightly.NextRun),
	}
	for name, h := range map[string]http.Handler{"Collector": old, "Handler": cur} {
		_, body := get(t, h, acceptText, "")
		got := samples(t, body)
		for series, v := range want {
			if got[series] != v {
				t.Errorf("%s: %s = %v, want %v", name, series, strconv.FormatFloat(got[series], 'f', -1, 64), strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
		if d := got[`jobwatch_job_deadline_timestamp_seconds{job_name="every"}`]; d < unixExact(every.Deadline) || d != math.Trunc(d) {
			t.Errorf("%s: deadline %v, before %v or not whole", name, d, unixExact(every.Deadline))
		}
	}
}

func unixExact(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// jobwatch_job_paused appears once it counts: for a job with a maintenance
// window, or once the job has been paused (and after it is resumed), never
// for a job never paused.
func TestPausedAppearsOnceItCounts(t *testing.T) {
	now := t0
	clock := func() time.Time { return now }
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: clock, Alive: func(int) bool { return true }})
	daily := schedule.Every(24 * time.Hour)
	tr.Configure([]model.JobSpec{
		{Name: "plain", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "paused", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "windowed", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Maintenance: []model.Window{{Schedule: daily, Duration: time.Minute}}},
	}, []model.SourceSpec{{Name: "log", Type: "runlog"}})
	var saved *model.Saved
	old, cur := servers(func() *model.Saved { return saved }, clock)
	check := func(want map[string]float64) {
		t.Helper()
		saved = saved.With(tr.Changes())
		for name, h := range map[string]http.Handler{"Collector": old, "Handler": cur} {
			_, body := get(t, h, acceptText, "")
			got := samples(t, body)
			for _, job := range []string{"plain", "paused", "windowed"} {
				series := `jobwatch_job_paused{job_name="` + job + `"}`
				v, ok := got[series]
				if w, has := want[job]; ok != has || v != w {
					t.Errorf("%s: %s = %v (present %v), want %v (present %v)", name, series, v, ok, w, has)
				}
			}
		}
	}
	check(map[string]float64{"windowed": 0})
	if _, err := tr.Pause("paused", model.Pause{Reason: "moving"}); err != nil {
		t.Fatal(err)
	}
	check(map[string]float64{"paused": 1, "windowed": 0})
	now = now.Add(time.Minute)
	if err := tr.Resume("paused"); err != nil {
		t.Fatal(err)
	}
	check(map[string]float64{"paused": 0, "windowed": 0})
}
