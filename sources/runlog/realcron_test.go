package runlog

import (
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/crontest"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// TestRunLogRealCron runs the real Debian cron -L 15 with rsyslog writing
// cron's lines to a file, in a private mount and UTS namespace (its own
// /etc/cron.d, /etc/crontab, /var/spool/cron, /run, and a /dev of its own
// whose /dev/log is rsyslog's), under faketime so that jobs of every minute
// run every second; then reads that file with format cron into a real
// tracker and checks every run against the lines.
func TestRunLogRealCron(t *testing.T) {
	crontest.Need(t)
	c := crontest.Run(t, 15, `SHELL=/bin/sh
PATH=/usr/bin:/bin
MAILTO=""
* * * * * root %[1]s/bin/ok.sh
* * * * * root %[1]s/bin/fail.sh --verbose
* * * * * root %[1]s/bin/jobwatch run --job report -- /bin/true
* * * * * root /bin/false
`, map[string]string{
		"ok.sh":   "#!/bin/sh\nexit 0\n",
		"fail.sh": "#!/bin/sh\necho failing >&2\nexit 3\n",
		// Stands for jobwatch run: only the command cron logs matters here.
		"jobwatch": "#!/bin/sh\nexit 0\n",
	}, false)
	// Wait for five failing runs to have ended (five fake minutes).
	c.WaitLines(t, 4*5, "END ([")
	c.Stop()
	lines, logPath := c.Lines(), c.Log
	t.Logf("%d lines of the real cron, e.g.:\n%s", len(lines), strings.Join(lines[:min(8, len(lines))], "\n"))
	count := func(words ...string) uint64 { return crontest.Count(lines, words...) }

	now := time.Now().Add(time.Minute)
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "cronhost", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	var specs []model.JobSpec
	for _, j := range []string{"ok", "cleanup", "report"} {
		specs = append(specs, model.JobSpec{Name: j, Schedule: schedule.Every(time.Minute), StaleMultiple: 2})
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	level := 15
	src, err := New("runs", Config{Path: logPath, Config: record.Config{Format: "cron", CronLogLevel: &level, Commands: []record.Command{
		{Match: `/bin/ok\.sh$`, Job: "ok"},
		{Match: `/bin/fail\.sh`, Job: "cleanup"},
	}}}, sources.Deps{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runStepped(t, src, &healthSink{Tracker: tr})
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
		{"ok", count("END", "ok.sh"), 0},
		{"cleanup", 0, count("error (grandchild", "exit status 3")},
		{"report", count("END", "jobwatch run --job report"), 0},
	} {
		j := got[tc.job]
		if tc.success+tc.fail == 0 {
			t.Errorf("%s: cron logged no run of it", tc.job)
		}
		if j.RunCounts[0] != tc.success || j.RunCounts[1] != tc.fail {
			t.Errorf("%s: %d successes, %d failures; the log has %d and %d", tc.job, j.RunCounts[0], j.RunCounts[1], tc.success, tc.fail)
		}
	}
	if c := got["cleanup"]; !c.HasLastExitCode || c.LastExitCode != 3 {
		t.Errorf("cleanup: last exit code %d (known %v), want 3", c.LastExitCode, c.HasLastExitCode)
	}
	if n := count("END", "fail.sh"); got["cleanup"].RunCounts[1] != n {
		t.Errorf("cleanup: %d failures counted, %d END lines: an END after an error must not be a second run", got["cleanup"].RunCounts[1], n)
	}
	if u, want := srcs[0].UnknownJob, count("/bin/false"); u != want || want == 0 {
		t.Errorf("unknown job records %d, want the %d lines of /bin/false", u, want)
	}
	if srcs[0].ParseErrors != 0 {
		t.Errorf("%d parse errors", srcs[0].ParseErrors)
	}
}
