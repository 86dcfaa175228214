package journal

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/crontest"
	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// realCronTab: a job that succeeds, one that exits 3, one nothing maps.
const realCronTab = `SHELL=/bin/sh
PATH=/usr/bin:/bin
MAILTO=""
* * * * * root %[1]s/bin/jw-ok.sh >/dev/null
* * * * * root %[1]s/bin/jw-fail.sh
* * * * * root /bin/false
`

var realCronScripts = map[string]string{
	"jw-ok.sh":   "#!/bin/sh\nexit 0\n",
	"jw-fail.sh": "#!/bin/sh\nexit 3\n",
}

// TestRealCronLevels runs the real Debian cron at -L 1, 2, 3, 7 and 15
// (crontest: its own namespace, rsyslog writing its lines to a file,
// faketime at 60x), and gives the very lines it logged to both readers of
// cron's lines: the runlog source's format cron (record.Cron) and this
// source, through a journal made of them by systemd-journal-remote. Both
// must make the same runs: the same starts, ends, PIDs, results, exit
// codes, and whether a run's end will be logged. Each reader is told the
// level, as host mode tells it (cron_log_level).
func TestRealCronLevels(t *testing.T) {
	crontest.Need(t)
	needJournalTools(t)
	for _, level := range []int{1, 2, 3, 7, 15} {
		t.Run(fmt.Sprintf("L%d", level), func(t *testing.T) {
			c := crontest.Run(t, level, realCronTab, realCronScripts, false)
			word := "CMD ("
			if level&2 != 0 {
				word = "END ("
			}
			c.WaitLines(t, 3*4, word, "jw-") // four fake minutes of both jobs
			c.Stop()
			lines := c.Lines()
			t.Logf("-L %d: %d lines, e.g.:\n%s", level, len(lines), strings.Join(lines[:min(8, len(lines))], "\n"))

			fromFile := runlogEvents(t, lines, level)
			evs := journalEvents(t, lines, level)
			var fromJournal []string
			for _, ev := range evs {
				if s := cronEventString(ev); s != "" {
					fromJournal = append(fromJournal, s)
				}
			}
			if len(fromFile) == 0 {
				t.Fatal("the runlog reader made no event")
			}
			if got, want := strings.Join(fromJournal, "\n"), strings.Join(fromFile, "\n"); got != want {
				t.Errorf("the journal source and the runlog reader differ:\njournal:\n%s\nrunlog:\n%s", got, want)
			}
			checkLevelRuns(t, level, lines, fromFile)
			if level == 1 {
				checkUnknownRuns(t, evs)
			}
		})
	}
}

// checkLevelRuns checks what a level gives against the lines: every run's
// start (-L 1), its end, its result when failures are logged.
func checkLevelRuns(t *testing.T, level int, lines, events []string) {
	t.Helper()
	count := func(s string) int {
		n := 0
		for _, e := range events {
			if strings.Contains(e, s) {
				n++
			}
		}
		return n
	}
	ok, fail := crontest.Count(lines, "CMD (", "jw-ok"), crontest.Count(lines, "CMD (", "jw-fail")
	okEnd, failEnd := crontest.Count(lines, "END (", "jw-ok"), crontest.Count(lines, "END (", "jw-fail")
	switch level {
	case 1:
		if count("start ok") != int(ok) || count("end_unlogged") != int(ok+fail) || count("end ") != 0 {
			t.Errorf("-L 1: want %d starts of ok, every start saying its end is not logged, no end", ok)
		}
	case 2, 3:
		if count("end ok") != int(okEnd) || count("end fail") != int(failEnd) || count("unknown") != int(okEnd+failEnd) {
			t.Errorf("-L %d: want every end's result unknown (no failure is logged)", level)
		}
	default:
		if count("end ok pid") != int(okEnd) || count("end fail") != int(failEnd) || count("failure exit=3") != int(failEnd) || count("success") != int(okEnd) {
			t.Errorf("-L %d: want %d successes and %d failures with exit code 3", level, okEnd, failEnd)
		}
		if level&8 == 0 && count("end ok pid=0") > 0 {
			t.Errorf("-L %d: an end whose start was read has no PID", level)
		}
	}
}

var realCronRules = []CronMatch{{Match: `/bin/jw-ok\.sh`, Job: "ok"}, {Match: `/bin/jw-fail\.sh$`, Job: "fail"}}

// cronEventString is what both readers must agree on of an event.
func cronEventString(ev model.Event) string {
	if ev.Job == "" {
		return ""
	}
	s := fmt.Sprintf("%s %s %s pid=%d", ev.Time.UTC().Format("15:04:05"), ev.Kind, ev.Job, ev.PID)
	if ev.Kind == model.End {
		s += " " + string(ev.Result)
		if ev.HasExitCode {
			s += fmt.Sprintf(" exit=%d", ev.ExitCode)
		}
	}
	if ev.EndUnlogged {
		s += " end_unlogged"
	}
	return s
}

func runlogEvents(t *testing.T, lines []string, level int) []string {
	var cmds []record.Command
	for _, m := range realCronRules {
		cmds = append(cmds, record.Command{Match: m.Match, Job: m.Job})
	}
	p, err := record.NewCron(cmds, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.SetLevel(level)
	var out []string
	for _, l := range lines {
		var ev model.Event
		if err := p.Parse([]byte(l), &ev); err == nil {
			if s := cronEventString(ev); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// syslogLineRE splits a line of rsyslog's default file format.
var syslogLineRE = regexp.MustCompile(`^(\S+) (\S+) (\w+)\[(\d+)\]: (.*)$`)

func journalEvents(t *testing.T, lines []string, level int) []model.Event {
	h := journaltest.NewHost(crontest.Hostname, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	var entries []journaltest.Entry
	for _, l := range lines {
		m := syslogLineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a syslog line: %q", l)
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(m[4])
		e := h.Cron(at, pid, m[5])
		e.Set("SYSLOG_IDENTIFIER", m[3])
		entries = append(entries, e)
	}
	dir := t.TempDir()
	if err := journaltest.Append(filepath.Join(dir, "system.journal"), entries); err != nil {
		t.Fatal(err)
	}
	j, err := New("cron", Config{Directory: dir, Cron: realCronRules, CronLogLevel: &level}, sources.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	j.pause = 20 * time.Millisecond
	sink := &jSink{}
	stop := jRun(t, j, nil, sink)
	jSettled(t, sink, 1, 30*time.Second, "cron's runs")
	stop()
	return sink.events()
}

// checkUnknownRuns applies the journal source's events of cron at -L 1 to
// the model, on cron's host, with every job's process gone: each run of
// the healthy job ends with result unknown, none is lost or failed, and
// the job is not failing. (Its runs come a second apart, faketime's
// minutes: that it is not stale while they go on is
// model.TestEndUnloggedRunsAreUnknown's, over 10 minutes.)
func checkUnknownRuns(t *testing.T, evs []model.Event) {
	t.Helper()
	now := evs[len(evs)-1].Time.Add(time.Second)
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: crontest.Hostname, Now: func() time.Time { return now },
		Alive: func(int) bool { return false }})
	every, err := schedule.ParseCron("* * * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]model.JobSpec{{Name: "ok", Schedule: every, StaleMultiple: 2}, {Name: "fail", Schedule: every, StaleMultiple: 2}},
		[]model.SourceSpec{{Name: "cron", Type: "journal", Runs: true, LateWindow: DefaultLateWindow}})
	tr.SetHealth("cron", true, nil)
	tr.Apply(model.Batch{Source: "cron", AtEnd: true, Events: evs})
	// A reap applies the starts the late window held and sees their
	// processes gone; the next, a minute later, closes those (gone for
	// longer than model.DefaultLostAfter, the late window passed).
	for range 3 {
		tr.Reap()
		now = now.Add(time.Minute)
	}
	jobs, _ := tr.View()
	starts := 0
	for _, ev := range evs {
		if ev.Job == "ok" && ev.Kind == model.Start {
			starts++
		}
	}
	for _, j := range jobs {
		if j.Spec.Name != "ok" {
			continue
		}
		unknown := j.RunCounts[slices.Index(model.Results, model.Unknown)]
		if int(unknown) != starts || j.RunCounts[slices.Index(model.Results, model.Lost)] != 0 || j.ConsecutiveFailures != 0 {
			t.Errorf("-L 1: ok's runs %v (%d failures in a row), want its %d runs unknown, none lost", j.RunCounts, j.ConsecutiveFailures, starts)
		}
	}
}
