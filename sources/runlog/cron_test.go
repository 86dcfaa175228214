package runlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/crontest"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// TestRunLogCronFormat follows the lines the real Debian cron -L 15 wrote
// through rsyslog (record/testdata/cron/README.md) into a real tracker:
// each failing run counts once, as a failure (its END line is not a second,
// successful run), jobs are told apart by their commands, the jobwatch run
// job maps itself, and the unmapped /bin/false counts as an unknown job.
func TestRunLogCronFormat(t *testing.T) {
	fixture := filepath.Join("record", "testdata", "cron", "L15-traditional.log")
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	// What the fixture holds, counted from its lines.
	lines := strings.Split(string(data), "\n")
	count := func(words ...string) uint64 { return crontest.Count(lines, words...) }
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "cron.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "web1", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	var specs []model.JobSpec
	for _, j := range []string{"backup", "cleanup", "slow", "report"} {
		specs = append(specs, model.JobSpec{Name: j, Schedule: schedule.Every(time.Minute), StaleMultiple: 2})
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	src, err := New("runs", Config{Path: path, Config: record.Config{Format: "cron", Commands: []record.Command{
		{Match: `/bin/backup\.sh`, Job: "backup"},
		{Match: `/bin/fail\.sh`, Job: "cleanup"},
		{Match: `/bin/slow\.sh`, Job: "slow"},
	}}}, sources.Deps{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sink := &healthSink{Tracker: tr}
	_, stop := runStepped(t, src, sink)
	stop()
	jobs, srcs := tr.View()
	got := map[string]model.JobView{}
	for _, j := range jobs {
		got[j.Spec.Name] = j
	}
	for _, tc := range []struct {
		job           string
		success, fail uint64
	}{
		{"backup", count("END", "backup.sh"), 0},
		{"cleanup", 0, count("END", "fail.sh")},
		{"report", count("END", "jobwatch run --job report"), 0},
		{"slow", 0, 0},
	} {
		if tc.job != "slow" && tc.success+tc.fail == 0 {
			t.Fatalf("%s: the fixture has no run of it", tc.job)
		}
		j := got[tc.job]
		if j.RunCounts[0] != tc.success || j.RunCounts[1] != tc.fail {
			t.Errorf("%s: %d successes, %d failures; want %d and %d", tc.job, j.RunCounts[0], j.RunCounts[1], tc.success, tc.fail)
		}
	}
	if f := count("error (grandchild", "exit status 3"); got["cleanup"].RunCounts[1] != f || f == 0 {
		t.Errorf("cleanup failed %d times, the log has %d failures", got["cleanup"].RunCounts[1], f)
	}
	if n := len(got["slow"].Open); n == 0 {
		t.Errorf("slow: no run in progress, the log has %d starts and no end", count("CMD", "slow.sh"))
	}
	if u, want := srcs[0].UnknownJob, count("/bin/false"); u != want {
		t.Errorf("unknown job records %d, want the %d lines of /bin/false", u, want)
	}
	if srcs[0].ParseErrors != 0 {
		t.Errorf("%d parse errors", srcs[0].ParseErrors)
	}
}

func TestCronLevelCheck(t *testing.T) {
	for _, tc := range []struct {
		level int
		want  string
	}{
		{15, ""}, {7, ""},
		{6, "logs no starts"},
		{1, "results are not logged"},
		{9, "results are not logged"},
		{0, "logs nothing about jobs"},
		{5, "no END lines"},
		{3, "every run that ends has result unknown"},
	} {
		level := tc.level
		src, err := New("cron", Config{Path: "/var/log/cron.log", Config: record.Config{Format: "cron", CronLogLevel: &level}}, sources.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		err = src.Check(context.Background())
		var w sources.Warning
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("level %d: %v, want no warning", level, err)
		case tc.want != "" && (!errors.As(err, &w) || !strings.Contains(string(w), tc.want)):
			t.Errorf("level %d: %v, want a warning saying %q", level, err, tc.want)
		}
	}
	// The default is Debian's: starts only.
	src, _ := New("cron", Config{Path: "/var/log/cron.log", Config: record.Config{Format: "cron"}}, sources.Deps{})
	if err := src.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "cron_log_level 1") {
		t.Errorf("default level: %v, want the warning of level 1", err)
	}
}
