package collector

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func populated(now time.Time) *model.Tracker {
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 30 * time.Minute, Scope: "cluster", StaleMultiple: 2},
		{Name: "stats", Schedule: schedule.Every(time.Hour), Scope: "host", StaleMultiple: 2},
		{Name: "cleanup", Schedule: schedule.Every(time.Hour), Timeout: time.Minute, StaleMultiple: 1, Discovered: true},
	}, []model.SourceSpec{{Name: "app-runs", Type: "runlog"}})
	tr.SetHealth("app-runs", true, nil)
	ev := func(kind model.Kind, job, host string, pid int, t time.Time) model.Event {
		return model.Event{Kind: kind, Job: job, Host: host, PID: pid, Time: t}
	}
	endEv := func(job, host string, pid int, t time.Time, r model.Result, exit int) model.Event {
		e := ev(model.End, job, host, pid, t)
		e.Result, e.ExitCode, e.HasExitCode = r, exit, true
		return e
	}
	skipEv := func(job, host string, pid int, t time.Time, reason string) model.Event {
		e := ev(model.Skip, job, host, pid, t)
		e.Reason, e.SkipLabel = reason, reason
		if reason != "locked" {
			e.SkipLabel = model.SkipOther // as a source counts a reason it does not know
		}
		return e
	}
	lostEv := func(job, host string, pid int, t time.Time, lock string) model.Event {
		e := ev(model.LockLost, job, host, pid, t)
		e.Lock, e.Reason = lock, "key_gone"
		return e
	}
	tr.Apply(model.Batch{Source: "app-runs", ParseErrors: 1, Events: []model.Event{
		ev(model.Start, "stats", "web1", 4242, t0),
		endEv("stats", "web1", 4242, t0.Add(40*time.Second), model.Success, 0),
		ev(model.Start, "stats", "web1", 4300, t0.Add(time.Hour)),
		skipEv("stats", "web1", 4301, t0.Add(2*time.Hour), "locked"),
		skipEv("backup", "db1", 10, t0.Add(-24*time.Hour), "maintenance window"),
		lostEv("stats", "web1", 4300, t0.Add(90*time.Minute), "redis"),
		ev(model.Start, "stats", "web2", 77, t0.Add(2*time.Hour+time.Second)),
		ev(model.Start, "backup", "db1", 9, t0.Add(-26*time.Hour)),
		endEv("backup", "db1", 9, t0.Add(-25*time.Hour), model.Failure, 2),
		ev(model.Start, "ghost", "web1", 1, t0),
		endEv("cleanup", "web1", 20, t0.Add(-3*time.Hour), model.Success, 0),
		endEv("cleanup", "web1", 21, t0.Add(-2*time.Hour), model.Failure, 1),
		endEv("cleanup", "web1", 22, t0.Add(-time.Hour), model.Failure, 1),
	}})
	// cleanup, found by host mode, disappears from the host: retired, its
	// history kept, none of the series an alert fires on.
	tr.Configure([]model.JobSpec{
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 30 * time.Minute, Scope: "cluster", StaleMultiple: 2},
		{Name: "stats", Schedule: schedule.Every(time.Hour), Scope: "host", StaleMultiple: 2},
	}, []model.SourceSpec{{Name: "app-runs", Type: "runlog"}})
	return tr
}

func TestCollectorGolden(t *testing.T) {
	now := t0.Add(2*time.Hour + 30*time.Minute)
	c := New(populated(now), func() time.Time { return now })
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// promtool's linter must find nothing in the exposition.
func TestExpositionPassesPromtool(t *testing.T) {
	promtool := testproc.Program(t, "promtool", "prometheus")
	now := t0.Add(2 * time.Hour)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(populated(now), func() time.Time { return now }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		expfmt.MetricFamilyToText(&b, mf)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &b
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
