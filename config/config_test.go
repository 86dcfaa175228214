package config_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/labelname"
	_ "github.com/jobwatch/jobwatch/sources/all"
	"github.com/jobwatch/jobwatch/sources/runlog"
)

func TestParseValid(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
jobs:
  - name: stats
    every: 1h
    timeout: 25m
  - name: backup
    every: 24h
    scope: cluster
    grace: 5m
sources:
  - name: app-runs
    type: runlog
    path: runs.log
    format: json
  - name: billing-app
    type: runlog
    path: /var/log/billing/app.log
    format: regex
    time_format: "2006-01-02 15:04:05.000"
    timezone: Asia/Shanghai
    patterns:
      - regex: '^(?P<time>\S+ \S+) .*\[(?P<job>[\w.-]+)\] previous run still running, skipping'
        event: skip
        reason: locked
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StaleMultiple != config.DefaultStaleMultiple {
		t.Errorf("stale_multiple default %d", cfg.StaleMultiple)
	}
	if got := cfg.Jobs[0].Timeout.D(); got != 25*time.Minute {
		t.Errorf("timeout %s", got)
	}
	if cfg.Jobs[1].Scope != "cluster" || cfg.Jobs[1].Grace.D() != 5*time.Minute {
		t.Errorf("job 2: %+v", cfg.Jobs[1])
	}
	if p := cfg.Sources[1].Config.(*runlog.Config).Patterns[0]; p.Event != "skip" || p.Reason != "locked" {
		t.Errorf("pattern: %+v", p)
	}
}

// Every problem is reported at once, each naming its job or source.
func TestParseReportsEveryProblem(t *testing.T) {
	_, err := config.Parse(strings.NewReader(`
stale_multiple: -1
jobs:
  - name: stats
    every: 1h
  - name: stats
    every: 2h
  - name: "bad name"
    every: 1h
  - name: nosched
  - name: both
    every: 1h
    schedule: "* * * * *"
  - name: zone
    every: 1h
    timezone: Mars/Olympus
  - name: scoped
    every: 1h
    scope: planet
  - every: 1h
  - name: flavour
    schedule: "0 0 * * *"
    cron: vixie
  - name: flavoured-period
    every: 1h
    cron: cronie
  - name: cronie
    schedule: "0 0 * * *"
    cron: cronie
sources:
  - name: a
    type: runlog
    format: xml
  - name: a
    type: runlog
    path: x.log
    format: regex
    patterns:
      - regex: '(?P<time>[0-9+'
      - regex: '(?P<when>\S+) (?P<job>\S+)'
        event: begin
  - name: db
    type: mysql
    path: /tmp/x
  - name: j
    type: journal
    units:
      x.service: nosuchjob
  - name: t
    type: ftp
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"stale_multiple must be at least 1",
		`job "stats": duplicate job name`,
		`job "bad name": name "bad name" must match`,
		`job "nosched": exactly one of every, schedule and on_calendar is required, got 0`,
		`job "both": exactly one of every, schedule and on_calendar is required, got 2`,
		`job "zone": timezone: unknown time zone "Mars/Olympus"`,
		`job "zone": timezone: applies only to schedule and on_calendar, not to every`,
		`job "scoped": scope must be host or cluster`,
		"jobs[7]: name is required",
		`job "flavour": cron must be debian or cronie, got "vixie"`,
		`job "flavoured-period": cron: applies only to schedule`,
		`source "a": path is required`,
		`source "a": format must be json, logfmt, regex or cron, got "xml"`,
		`source "a": duplicate source name`,
		`source "a": patterns[0].regex: error parsing regexp`,
		`source "a": patterns[1].regex: unknown group "when"`,
		`source "a": patterns[1].regex: a (?P<time>...) group is required`,
		`source "a": patterns[1].event must be start, end, skip or lock_lost, got "begin"`,
		`source "db": line 44: unknown field "path" for type "mysql"`,
		`source "db": exactly one of dsn and dsn_file is required`,
		`source "j": units[x.service]: job "nosuchjob" is not configured`,
		`source "t": type must be one of journal, locks, mysql, runlog, got "ftp"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `job "cronie"`) {
		t.Errorf("cron: cronie rejected:\n%v", err)
	}
}

// Every job's schedule is read as serve reads it, so that a bad one is a
// config error from every caller of Parse and Load, naming its job.
func TestParseChecksSchedules(t *testing.T) {
	_, err := config.Parse(strings.NewReader(`
jobs:
  - name: feb30
    schedule: "0 0 30 2 *"
  - name: calendars
    on_calendar: ["*-*-* 03:00", "Mo 04:00"]
    timezone: Europe/Berlin
  - name: cronie
    schedule: "CRON_TZ=Asia/Tokyo 0 12 * * *"
    cron: cronie
  - name: flavour
    schedule: "0 99 * * *"
    cron: vixie
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`job "feb30": schedule: "0 0 30 2 *": never fires`,
		`job "calendars": on_calendar[1]: "Mo 04:00"`,
		`job "flavour": cron must be debian or cronie, got "vixie"`,
		`job "flavour": schedule: "0 99 * * *": hour: 99 out of range 0-23`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `job "cronie"`) || strings.Contains(err.Error(), "unknown cron flavour") {
		t.Errorf("a valid job rejected, or the flavour reported twice:\n%v", err)
	}
}

func TestParseRejectsUnknownKeysAndBadDurations(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown top-level key", "jobz: []\n", `line 1: unknown field "jobz"`},
		{"unknown job key", "jobs:\n  - name: a\n    every: 1h\n    evry: 2h\n", `job "a": line 4: unknown field "evry"`},
		{"unknown key in a source", "jobs: [{name: a, every: 1h}]\nsources:\n  - name: s\n    type: runlog\n    path: x\n    format: json\n    colour: blue\n", `source "s": line 7: unknown field "colour" for type "runlog"`},
		{"unknown key deep in a source", "jobs: [{name: a, every: 1h}]\nsources:\n  - name: db\n    type: mysql\n    dsn: u@/d\n    columns:\n      idd: x\n", `source "db": line 7: unknown field "idd" for type "mysql"`},
		{"bad duration in a source", "jobs: [{name: a, every: 1h}]\nsources:\n  - name: db\n    type: mysql\n    dsn: u@/d\n    poll_interval: soon\n", `source "db": line 6: bad duration "soon"`},
		{"bad duration", "jobs:\n  - name: a\n    every: hourly\n", `bad duration "hourly"`},
		{"number as duration", "jobs:\n  - name: a\n    every: 60\n", `bad duration "60"`},
		{"empty file", "", "no jobs configured"},
		{"unknown key beside a merge", "jobs:\n  - &base {name: a, every: 1h}\n  - <<: *base\n    name: b\n    colour: x\n", `job "b": line 5: unknown field "colour"`},
		{"unknown key in a merged mapping", "jobs:\n  - &base {name: a, every: 1h, evry: 1h}\n  - <<: *base\n    name: b\n", `job "b": line 2: unknown field "evry"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadResolvesPathsAgainstTheConfigDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobwatch.yml")
	os.WriteFile(path, []byte("jobs:\n  - name: a\n    every: 1h\nsources:\n  - name: s\n    type: runlog\n    path: logs/runs.log\n    format: json\n"), 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Sources[0].Config.(*runlog.Config).Path, filepath.Join(dir, "logs/runs.log"); got != want {
		t.Fatalf("path %s, want %s", got, want)
	}
	if _, err := config.Load(filepath.Join(dir, "missing.yml")); err == nil || !strings.Contains(err.Error(), "missing.yml") {
		t.Fatalf("missing file: %v", err)
	}
}

// FuzzParse: any input is a config or an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("jobs:\n  - name: a\n    every: 1h\nsources:\n  - name: s\n    type: runlog\n    path: x\n    format: json\n"))
	f.Add([]byte("jobs: [{name: a, schedule: '* * * * *', timezone: UTC}]\nsources: [{name: j, type: journal, units: {a.service: a}}]\n"))
	f.Add([]byte("jobs:\n  - &a {name: x}\n  - *a\n"))
	f.Add([]byte("jobs:\n  - &b {name: a, every: 1d}\n  - <<: [*b]\n    name: c\nsources:\n  - &s {name: db, type: mysql, dsn: u@/d, columns: {id: i}}\n  - <<: *s\n    name: db2\n"))
	f.Add([]byte("labels: {team: a, __x: b}\nalert_after: {failures: 2}\njobs:\n  - name: a\n    every: 1h\n    labels: {owner: b, job: c}\n    alert_after: {skips: 0, missed_runs: x}\n"))
	f.Add([]byte("labels: [a]\njobs: [{name: a, every: 1h, labels: {t: {x: 1}}, alert_after: 3}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(strings.NewReader(string(data)))
		if err == nil && len(cfg.Jobs) == 0 {
			t.Fatal("a valid config without jobs")
		}
		if err != nil {
			return
		}
		// A valid config's jobs have only allowed label names and
		// thresholds of at least 1 where set.
		for _, j := range cfg.Jobs {
			for k := range j.Labels {
				if err := labelname.Check(k); err != nil {
					t.Fatalf("job %q has label %q: %v", j.Name, k, err)
				}
			}
			if a := j.AlertAfter; a.Failures < 0 || a.MissedRuns < 0 || a.Skips < 0 {
				t.Fatalf("job %q: alert_after %+v", j.Name, a)
			}
		}
	})
}

// The file's labels and alert_after are each job's defaults: a key or a
// count the job sets wins, the others are the file's.
func TestLabelsAndAlertAfterDefaults(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
labels: {team: platform, tier: "2"}
alert_after: {failures: 3, skips: 5}
jobs:
  - name: payments
    every: 1h
    labels: {team: payments, owner: alice}
    alert_after: {failures: 1, missed_runs: 2}
  - name: report
    every: 1d
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job    int
		labels config.Labels
		after  config.AlertAfter
	}{
		{0, config.Labels{"team": "payments", "owner": "alice", "tier": "2"}, config.AlertAfter{Failures: 1, MissedRuns: 2, Skips: 5}},
		{1, config.Labels{"team": "platform", "tier": "2"}, config.AlertAfter{Failures: 3, Skips: 5}},
	} {
		j := cfg.Jobs[tc.job]
		if !maps.Equal(j.Labels, tc.labels) || j.AlertAfter != tc.after {
			t.Errorf("job %s: labels %v, alert_after %+v; want %v, %+v", j.Name, j.Labels, j.AlertAfter, tc.labels, tc.after)
		}
	}
}
