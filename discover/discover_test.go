package discover

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/schedule"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// now is the instant the fixture checks start from: the DST changes found
// are those of 2026.
var now = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

var fixtures = []string{"debian", "cronie", "example"}

func readFixture(t *testing.T, name string) (*Host, []Finding) {
	t.Helper()
	h, err := Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return h, Check(h, Options{Now: now})
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./discover -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test ./discover -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// parseConfig reads a generated config as jobwatch does (config.Parse
// checks the schedules too) and builds every job's schedule.
func parseConfig(t *testing.T, data []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("generated config is not valid: %v\n%s", err, data)
	}
	for _, j := range cfg.Jobs {
		if _, err := schedule.New(j.ScheduleSpec(), time.UTC); err != nil {
			t.Errorf("job %q: %v", j.Name, err)
		}
	}
	return cfg
}

func TestGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			h, findings := readFixture(t, name)
			yml, err := Generate(h, GenerateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".yml", yml)
			js, err := Generate(h, GenerateOptions{JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json", js)
			var text, lines bytes.Buffer
			if err := WriteFindings(&text, findings, false); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".findings", text.Bytes())
			if err := WriteFindings(&lines, findings, true); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".findings.jsonl", lines.Bytes())

			// The same config either way, and one jobwatch accepts.
			fromYAML, fromJSON := parseConfig(t, yml), parseConfig(t, js)
			a, _ := json.Marshal(fromYAML.Jobs)
			b, _ := json.Marshal(fromJSON.Jobs)
			if !bytes.Equal(a, b) {
				t.Errorf("YAML and JSON configs' jobs differ:\n%s\n%s", a, b)
			}
			sa, _ := readShape(yml)
			sb, _ := readShape(js)
			a, _ = json.Marshal(sa)
			b, _ = json.Marshal(sb)
			if !bytes.Equal(a, b) || len(sa.Sources) == 0 {
				t.Errorf("YAML and JSON configs' sources differ:\n%s\n%s", a, b)
			}
			if len(fromYAML.Jobs) != len(h.Jobs) {
				t.Errorf("%d jobs in the config, %d found", len(fromYAML.Jobs), len(h.Jobs))
			}
			if len(h.Jobs) < 6 {
				t.Errorf("fixture %s has %d jobs, want at least six", name, len(h.Jobs))
			}
			for _, l := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
				var f Finding
				if err := json.Unmarshal([]byte(l), &f); err != nil || f.Kind == "" || f.Fix == "" {
					t.Errorf("JSON finding %q: %v", l, err)
				}
			}
		})
	}
}

func TestGeneratedJobs(t *testing.T) {
	h, _ := readFixture(t, "debian")
	yml, err := Generate(h, GenerateOptions{RunLog: "/var/log/jw/runs.log"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, yml)
	jobs := map[string]config.Job{}
	for _, j := range cfg.Jobs {
		jobs[j.Name] = j
	}
	tests := []struct {
		name string
		want config.Job
	}{
		// Debian's cron ignores the CRON_TZ of alice's crontab; jobwatch
		// run's --job names it.
		{"sync", config.Job{Name: "sync", Schedule: "*/10 * * * *", Timezone: "Europe/Berlin", Timeout: config.Duration(5 * time.Minute),
			Labels: config.Labels{"user": "alice"}}},
		// The host's zone from /etc/timezone.
		{"backup", config.Job{Name: "backup", Schedule: "30 2 * * *", Timezone: "Europe/Berlin", Labels: config.Labels{"user": "root"}}},
		// RandomizedDelaySec=100min + AccuracySec=1h; the drop-in's TimeoutStartSec.
		{"fstrim", config.Job{Name: "fstrim", OnCalendar: config.StringSet{"weekly"}, Timezone: "Europe/Berlin",
			Grace: config.Duration(160*time.Minute + timerStartSlack), Timeout: config.Duration(time.Hour), Persistent: true, Labels: config.Labels{"unit": "fstrim.timer"}}},
		// RandomizedDelaySec=30s from the drop-in + AccuracySec=1us.
		{"metrics-push", config.Job{Name: "metrics-push", OnCalendar: config.StringSet{"*:0/15"}, Timezone: "Europe/Berlin",
			Grace: config.Duration(30*time.Second + timerStartSlack), Timeout: config.Duration(10 * time.Minute), Persistent: true, Labels: config.Labels{"unit": "metrics-push.timer"}}},
		// OnUnitActiveSec; RuntimeMaxSec of a simple service.
		{"cache-clean", config.Job{Name: "cache-clean", Every: config.Duration(time.Hour),
			Grace: config.Duration(time.Minute + timerStartSlack), Timeout: config.Duration(20 * time.Minute), Labels: config.Labels{"unit": "cache-clean.timer"}}},
		// The timer keeps the unit's name (and its Persistent=); the cron
		// line gets its user, in its name and as its label user (a
		// timer's label is unit).
		{"db-dump", config.Job{Name: "db-dump", OnCalendar: config.StringSet{"*-*-* 03:15:00"}, Timezone: "Europe/Berlin", Grace: config.Duration(time.Minute + timerStartSlack), Persistent: true,
			Labels: config.Labels{"unit": "db-dump.timer"}}},
		{"db-dump-postgres", config.Job{Name: "db-dump-postgres", Schedule: "15 3 * * *", Timezone: "Europe/Berlin", Timeout: config.Duration(2 * time.Hour),
			Labels: config.Labels{"user": "postgres"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := jobs[tc.name]
			if !ok {
				t.Fatalf("no job %q in\n%s", tc.name, yml)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(tc.want)
			if !bytes.Equal(a, b) {
				t.Errorf("got  %s\nwant %s", a, b)
			}
		})
	}
	cronie, _ := readFixture(t, "cronie")
	for _, j := range cronie.Jobs {
		if j.Name == "digest" && j.Timezone != "Asia/Tokyo" {
			t.Errorf("cronie honours CRON_TZ: digest's zone is %q", j.Timezone)
		}
	}
	for _, left := range []string{"old-report", "start-agent", "weekly-report", "every-minute-and-one"} {
		if _, ok := jobs[left]; ok {
			t.Errorf("job %q must be left out (disabled timer, @reboot, ignored file, rejected line)", left)
		}
	}
	// Sources in the documented YAML shape (config decodes each type its
	// own way).
	sh, err := readShape(yml)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, src := range sh.Sources {
		types = append(types, src.Name+":"+src.Type)
		switch src.Type {
		case "runlog":
			if src.Path != "/var/log/jw/runs.log" || src.Format != "json" {
				t.Errorf("runlog source = %+v, want the path of --run-log, format json", src)
			}
		case "journal":
			if src.Units["fstrim.service"] != "fstrim" || len(src.Units) != 4 || len(src.Cron) != 8 {
				t.Errorf("journal source = %+v", src)
			}
			for _, m := range src.Cron {
				if m.Job == "sync" {
					t.Errorf("sync runs under jobwatch run: the run log watches it, not the journal")
				}
			}
		}
	}
	if got := strings.Join(types, " "); got != "journal:journal runs:runlog" {
		t.Errorf("sources = %s", got)
	}
}

// TestFindings checks each finding of the table on the fixture
// trees, with where it is reported and its severity.
func TestFindings(t *testing.T) {
	tests := []struct {
		fixture, where, kind string
		sev                  Severity
		text                 string
	}{
		{"debian", "/etc/systemd/system/db-dump.timer:5", KindDuplicate, Warning, "same command as db-dump-postgres (/etc/cron.d/dbdump:2)"},
		{"cronie", "/var/spool/cron/bob:3", KindDuplicate, Warning, "same command as rotate-logs (/etc/cron.d/app.conf:3)"},
		{"debian", "/etc/cron.d/backup:3", KindFlockBlocking, Warning, "flock without -n"},
		{"debian", "/etc/cron.d/backup:3", KindLockInTmp, Warning, "/tmp/backup.lock is in /tmp"},
		{"cronie", "/var/spool/cron/bob:2", KindLockInTmp, Warning, "/var/tmp/poll.lock is in /var/tmp"},
		{"debian", "/etc/cron.d/maint:3", KindLockInTmp, Warning, "in /var/lib/app/locks"}, // tmpfiles.d ages it
		{"debian", "/etc/cron.d/maint:2", KindSharedLock, Info, "shares lock /run/lock/maint.lock with rotate-archives"},
		{"debian", "/etc/systemd/system/metrics-push.timer:6", KindPersistentDense, Warning, "15m apart"},
		{"debian", "/etc/systemd/system/metrics-push.timer:7", KindAccuracy, Info, "AccuracySec=1us"},
		{"debian", "/etc/cron.d/backup:3", KindNoTimeout, Warning, "no timeout"},
		{"debian", "/etc/systemd/system/db-dump.timer:5", KindNoTimeout, Warning, "no timeout"},
		{"cronie", "/usr/lib/systemd/system/logrotate.timer:5", KindNoTimeout, Info, "no timeout"}, // a vendor unit
		{"debian", "/etc/cron.d/e2scrub_all:1", KindNoOp, Info, "runs only where systemd is not the init system"},
		{"debian", "/etc/cron.d/e2scrub_all:2", KindNoOp, Info, "runs only where systemd is not the init system"},
		{"debian", "/etc/crontab:18", KindNoTimeout, Info, "no timeout"}, // run-parts: the scripts' business
		{"debian", "/etc/cron.d/bad:2", KindNoLock, Info, "no lock"},
		{"debian", "/etc/cron.d/backup:3", KindDST, Info,
			"02:30 does not exist in Europe/Berlin on 2026-03-29 (clocks jump from 02:00 to 03:00): cron runs it once, at 03:00 CEST; a systemd timer would skip it"},
		{"debian", "/etc/cron.d/backup:3", KindDST, Info,
			"02:30 happens twice in Europe/Berlin on 2026-10-25 (clocks go back from 03:00 to 02:00): cron runs it once, at 02:30 CEST; a systemd timer would run it once, at 02:30 CEST"},
		{"cronie", "/etc/cron.d/app.conf:2", KindDST, Info, "02:00 does not exist in America/New_York on 2026-03-08"},
		{"cronie", "/usr/lib/systemd/system/backup@.timer:2", KindDST, Info,
			"01:30 happens twice in America/New_York on 2026-11-01 (clocks go back from 02:00 to 01:00): systemd runs it once, at 01:30 EDT"},
		{"debian", "/etc/cron.d/bad:1", KindCronRejected, Warning, `schedule: "61 * * * *": `},
		{"debian", "/var/spool/cron/crontabs/alice:3", KindCronTZIgnored, Warning, "Debian's cron ignores CRON_TZ: the lines below run on the host's clock (Europe/Berlin), not in America/New_York"},
		{"debian", "/etc/cron.d/bad:2", KindCronRejected, Warning, "unescaped %"},
		{"debian", "/etc/cron.d/report.dpkg-old", KindIgnoredFile, Info, "Debian cron reads only"},
		{"cronie", "/etc/cron.d/app.conf.rpmnew", KindIgnoredFile, Info, ".rpmnew"},
		{"debian", "/var/spool/cron/crontabs/alice:6", KindReboot, Info, "@reboot"},
		{"debian", "/var/spool/cron/crontabs/alice:4", KindTZEnv, Info, "TZ="},
		{"debian", "/etc/systemd/system/old-report.timer", KindTimerLeftOut, Info, "not enabled"},
	}
	all := map[string][]Finding{}
	for _, name := range fixtures {
		_, all[name] = readFixture(t, name)
	}
	for _, tc := range tests {
		t.Run(tc.fixture+"/"+tc.kind+"/"+tc.where, func(t *testing.T) {
			for _, f := range all[tc.fixture] {
				where := f.File
				if f.Line > 0 {
					where = fmt.Sprintf("%s:%d", f.File, f.Line)
				}
				if where == tc.where && f.Kind == tc.kind && strings.Contains(f.Message, tc.text) {
					if f.Severity != tc.sev {
						t.Errorf("severity %s, want %s", f.Severity, tc.sev)
					}
					if f.Fix == "" {
						t.Error("no fix")
					}
					return
				}
			}
			t.Errorf("no %s finding at %s containing %q", tc.kind, tc.where, tc.text)
		})
	}
	// What must not be flagged.
	for _, f := range all["debian"] {
		switch {
		case f.Job == "sync":
			t.Errorf("sync has a lock, a timeout and a wildcard schedule: %s", f)
		case f.Job == "fstrim" && f.Kind == KindNoTimeout:
			t.Errorf("fstrim's drop-in sets TimeoutStartSec: %s", f)
		case f.Job == "cache-clean":
			t.Errorf("cache-clean has RuntimeMaxSec and a period: %s", f)
		case f.Job == "db-dump" && f.Kind == KindPersistentDense:
			t.Errorf("a daily persistent timer is fine: %s", f)
		case f.Kind == KindNoLock && strings.HasPrefix(f.File, "/etc/systemd"):
			t.Errorf("systemd never overlaps a service's runs: %s", f)
		}
	}
	if !HasWarnings(all["debian"]) {
		t.Error("HasWarnings = false")
	}
}

func TestMerge(t *testing.T) {
	h, _ := readFixture(t, "debian")
	user := []byte(`# my hand-written config
stale_multiple: 3
jobs:
  - name: nightly-backup   # the cron line in /etc/cron.d/backup
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
  - name: dump
    on_calendar: "*-*-* 03:15:00"
  - name: sync
    every: 10m
sources:
  - name: journal
    type: journal
    units:
      db-dump.service: dump
    cron:
      - match: "backup\\.sh"
        job: nightly-backup
  - name: runs
    type: runlog
    path: /var/log/jobwatch/runs.log
    format: json
`)
	out, err := Generate(h, GenerateOptions{Merge: user})
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, out)
	if !bytes.Contains(out, []byte("# my hand-written config")) || !bytes.Contains(out, []byte("# the cron line in /etc/cron.d/backup")) {
		t.Errorf("the user's comments are lost:\n%s", out)
	}
	if cfg.StaleMultiple != 3 {
		t.Errorf("stale_multiple = %d, want the user's 3", cfg.StaleMultiple)
	}
	names := cfg.JobNames()
	for _, n := range []string{"nightly-backup", "dump", "sync", "fstrim", "metrics-push", "db-dump-postgres", "reindex"} {
		if !names[n] {
			t.Errorf("no job %q after the merge:\n%s", n, out)
		}
	}
	// Watched already: by cron match, by unit, by jobwatch run --job.
	for _, n := range []string{"backup", "db-dump", "sync-2"} {
		if names[n] {
			t.Errorf("job %q added although the config watches it", n)
		}
	}
	if len(cfg.Jobs) != len(h.Jobs) {
		t.Errorf("%d jobs after the merge, want %d (3 kept + %d added)", len(cfg.Jobs), len(h.Jobs), len(h.Jobs)-3)
	}
	var srcs []string
	for _, s := range cfg.Sources {
		srcs = append(srcs, s.Name+":"+s.Type)
	}
	// sync's run log is read already: no second runlog source.
	if got := strings.Join(srcs, " "); got != "journal:journal runs:runlog journal-2:journal" {
		t.Errorf("sources = %s", got)
	}

	// Merging again adds nothing.
	again, err := Generate(h, GenerateOptions{Merge: out})
	if err != nil {
		t.Fatal(err)
	}
	if cfg2 := parseConfig(t, again); len(cfg2.Jobs) != len(cfg.Jobs) || len(cfg2.Sources) != len(cfg.Sources) {
		t.Errorf("a second merge changed the config:\n%s", again)
	}
	if _, err := Generate(h, GenerateOptions{Merge: []byte("jobs: [")}); err == nil {
		t.Error("merging a broken file: no error")
	}
	// A schedule jobwatch would refuse is refused here too.
	if _, err := Generate(h, GenerateOptions{Merge: []byte("jobs:\n  - name: feb30\n    schedule: \"0 0 30 2 *\"\n")}); err == nil || !strings.Contains(err.Error(), `job "feb30": schedule: "0 0 30 2 *": never fires`) {
		t.Errorf("merging a file with a bad schedule: %v", err)
	}
}

func TestScan(t *testing.T) {
	w, err := WatchedFromYAML([]byte(`
jobs:
  - name: backup
    schedule: "30 2 * * *"
  - name: trim
    on_calendar: weekly
  - name: other
    every: 1h
sources:
  - name: j
    type: journal
    units:
      fstrim.service: trim
    cron:
      - match: "rotate-archives$"
        job: other
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Scan(filepath.Join("testdata", "debian"), nil, w, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	unwatched := jobNames(r.Unwatched)
	// backup by name, fstrim by unit, rotate-archives by cron match.
	want := "cron.hourly cron.daily tar db-dump-postgres prune-archives reindex sync cache-clean db-dump metrics-push"
	if got := strings.Join(unwatched, " "); got != want {
		t.Errorf("unwatched = %s\nwant        %s", got, want)
	}
	counts := map[string]int{}
	for _, c := range r.Counts() {
		counts[c.Kind+"/"+string(c.Severity)] = c.N
	}
	for k, n := range map[string]int{
		"duplicate_command/warning": 1, "no_timeout/warning": 2, "no_timeout/info": 2,
		"dst/info": 2, "cron_rejected/warning": 2, "persistent_dense/warning": 1,
		"unreadable/warning": 0, // exported as zero
	} {
		if got, ok := counts[k]; !ok || got != n {
			t.Errorf("count %s = %d (present %v), want %d", k, got, ok, n)
		}
	}
	if len(r.Counts()) < len(Kinds) {
		t.Errorf("%d counts, want one per kind at least", len(r.Counts()))
	}
	if _, err := WatchedFromYAML([]byte("sources:\n  - name: j\n    type: journal\n    cron:\n      - match: \"(\"\n        job: x\n")); err == nil {
		t.Error("a bad cron match: no error")
	}
	if _, err := Scan(filepath.Join(t.TempDir(), "missing"), nil, w, Options{}); err == nil {
		t.Error("Scan of a missing root: no error")
	}
}

func TestUnreadableAndEmpty(t *testing.T) {
	root := writeTree(t, map[string]string{
		"/etc/crontab/oops":                               "not a file but a directory above",
		"/etc/cron.d/ok":                                  "0 5 * * * root timeout 5m flock -n /run/lock/ok /bin/ok\n",
		"/etc/systemd/system/x.timer":                     "[Timer]\nOnCalendar=daily\n",
		"/etc/systemd/system/x.timer.d/":                  "",
		"/etc/systemd/system/timers.target.wants/x.timer": "->../x.timer",
	})
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	fs := Check(h, Options{Now: now})
	var kinds []string
	for _, f := range fs {
		kinds = append(kinds, f.File+" "+f.Kind)
	}
	got := strings.Join(kinds, "; ")
	for _, want := range []string{"/etc/crontab unreadable", "x.timer timer_left_out"} {
		if !strings.Contains(got, want) {
			t.Errorf("findings %q lack %q", got, want)
		}
	}
	if len(h.Jobs) != 2 {
		t.Errorf("jobs = %+v, want the cron.d line and the timer", h.Jobs)
	}
	writable := writeTree(t, map[string]string{"/etc/cron.d/shared": "0 5 * * * root /bin/x\n"})
	if err := os.Chmod(filepath.Join(writable, "etc", "cron.d", "shared"), 0o664); err != nil {
		t.Fatal(err)
	}
	if h, err = Read(writable); err != nil || len(h.Jobs) != 1 {
		t.Fatalf("a tree's modes are not trusted: %v, %+v", err, h)
	}
	h, err = read(writable, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fs := Check(h, Options{Now: now}); len(h.Jobs) != 0 || len(fs) != 1 || fs[0].Kind != KindIgnoredFile || fs[0].Severity != Warning ||
		fs[0].Message != "cron never reads this file: it is group- or other-writable (mode 0664)" {
		t.Errorf("group-writable crontab: jobs %+v, findings %+v", h.Jobs, fs)
	}
	empty := t.TempDir()
	h, err = Read(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(h, GenerateOptions{}); err == nil {
		t.Error("Generate with no jobs: no error")
	}
}

func TestNoSourceForPlainCronWithoutSystemd(t *testing.T) {
	root := writeTree(t, map[string]string{
		"/etc/cron.d/plain": "0 5 * * * root timeout 5m flock -n /run/lock/p /usr/bin/plain\n",
	})
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if h.Systemd {
		t.Fatal("no unit directories, yet Systemd is set")
	}
	out, err := Generate(h, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("No source sees this job's runs: wrap the command in jobwatch run.")) {
		t.Errorf("no hint for the unwatched line:\n%s", out)
	}
	if cfg := parseConfig(t, out); len(cfg.Sources) != 0 || len(cfg.Jobs) != 1 {
		t.Errorf("config %+v", cfg)
	}
}

// addCronSeeds adds the job and environment lines of the fixtures'
// crontabs one by one, and a few of several lines: small inputs, which the
// fuzzer mutates and minimises quickly.
func addCronSeeds(f *testing.F) {
	for _, name := range []string{"debian/etc/cron.d/maint", "debian/var/spool/cron/crontabs/alice", "cronie/etc/cron.d/app.conf",
		"debian/etc/crontab", "debian-stock/etc/cron.d/php", "debian-stock/etc/cron.d/certbot", "debian-stock/etc/cron.d/ntpsec"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				f.Add(l+"\n", true)
			}
		}
	}
	f.Add("CRON_TZ=Europe/Berlin\n0 2 * * * jobwatch run --job \"x y\" --log /l\xff -- /bin/\xfe\n@hourly a%b\n", false)
	f.Add("0 1 * * * root /bin/true\n0 1 * * * root /opt/null\n0 1 * * * root /opt/1.5\n0 1 * * * root ~\n0 1 * * * root '#x'\n", true)
}

// fuzzHost reads crontab as /etc/cron.d/f\xff of a host with no files.
func fuzzHost(crontab string, systemd bool) *Host {
	h := &Host{Root: "/nonexistent/discover-fuzz", Flavour: Debian, Zone: "Europe/Berlin", Systemd: systemd}
	h.readCrontab("/etc/cron.d/f\xff", []byte(crontab), true, "")
	h.name()
	return h
}

// FuzzReadCrontab: whatever a crontab holds, reading and checking it does
// not panic, every job has a name of its own that is a valid job name and
// not a shell keyword, and every finding has a known kind and a fix.
func FuzzReadCrontab(f *testing.F) {
	addCronSeeds(f)
	f.Fuzz(func(t *testing.T, crontab string, systemd bool) {
		h := fuzzHost(crontab, systemd)
		seen := map[string]bool{}
		for _, j := range h.Jobs {
			base := j.Name // without the -N a taken name gets
			if i := strings.LastIndexByte(base, '-'); i > 0 && strings.Trim(base[i+1:], "0123456789") == "" {
				base = base[:i]
			}
			keyword := (shKeywords[j.Name] || shKeywords[base]) && !shKeywords[j.Cmd.Name] // a program may be called fi
			if seen[j.Name] || jobName(j.Name) != j.Name || keyword {
				t.Fatalf("job name %q (taken before: %v) for %q", j.Name, seen[j.Name], j.CommandLine)
			}
			seen[j.Name] = true
		}
		known := map[string]bool{}
		for _, k := range Kinds {
			known[k] = true
		}
		for _, fd := range Check(h, Options{Now: now}) {
			if !known[fd.Kind] || fd.Fix == "" {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}

// FuzzGenerate: whatever a crontab holds, the config generated from it is
// one jobwatch accepts, as YAML and as JSON. Inputs are kept to a few
// lines, each costing a config parse: the fuzzer makes thousands a minute
// instead of minimising large inputs.
func FuzzGenerate(f *testing.F) {
	addCronSeeds(f)
	f.Fuzz(func(t *testing.T, crontab string, systemd bool) {
		if len(crontab) > 1024 || strings.Count(crontab, "\n") > 4 {
			return
		}
		h := fuzzHost(crontab, systemd)
		if len(h.Jobs) == 0 {
			return
		}
		for _, asJSON := range []bool{false, true} {
			out, err := Generate(h, GenerateOptions{JSON: asJSON})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			cfg, err := config.Parse(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("generated config rejected: %v\n%s", err, out)
			}
			if len(cfg.Jobs) != len(h.Jobs) {
				t.Fatalf("%d jobs generated, %d found", len(cfg.Jobs), len(h.Jobs))
			}
		}
	})
}

// TestDuplicateThroughPath: a cron line that names its program through
// PATH, or through /bin on a merged-/usr host, runs the same file as the
// timer that names it in full.
func TestDuplicateThroughPath(t *testing.T) {
	root := writeTree(t, map[string]string{
		"/bin":                                "->usr/bin",
		"/usr/bin/rsync":                      "",
		"/usr/local/bin/db-dump":              "",
		"/etc/cron.d/old":                     "PATH=/usr/local/bin:/usr/bin:/bin\n0 3 * * * root db-dump --all\n0 4 * * * root /bin/rsync -a /srv /backup\n",
		"/etc/cron.d/nopath":                  "0 5 * * * root db-dump --all\n", // cron's PATH lacks /usr/local/bin
		"/etc/systemd/system/db-dump.timer":   "[Timer]\nOnCalendar=03:00\n",
		"/etc/systemd/system/db-dump.service": "[Service]\nType=oneshot\nExecStart=/usr/local/bin/db-dump --all\nTimeoutStartSec=1h\n",
		"/etc/systemd/system/sync.timer":      "[Timer]\nOnCalendar=04:00\n",
		"/etc/systemd/system/sync.service":    "[Service]\nType=oneshot\nExecStart=rsync -a /srv /backup\nTimeoutStartSec=1h\n",
		"/etc/systemd/system/timers.target.wants/db-dump.timer": "->../db-dump.timer",
		"/etc/systemd/system/timers.target.wants/sync.timer":    "->../sync.timer",
	})
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	var dups []string
	for _, f := range Check(h, Options{Now: now}) {
		if f.Kind == KindDuplicate {
			dups = append(dups, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Message))
		}
	}
	want := []string{
		"/etc/systemd/system/db-dump.timer:2 runs the same command as db-dump-3 (/etc/cron.d/old:2): it runs twice",
		"/etc/systemd/system/sync.timer:2 runs the same command as rsync (/etc/cron.d/old:3): it runs twice",
	}
	if strings.Join(dups, "\n") != strings.Join(want, "\n") {
		t.Errorf("duplicates:\n%s\nwant:\n%s", strings.Join(dups, "\n"), strings.Join(want, "\n"))
	}
	var notInPath []string
	for _, f := range Check(h, Options{Now: now}) {
		if f.Kind == KindNotInPath {
			notInPath = append(notInPath, fmt.Sprintf("%s:%d %s %s; %s", f.File, f.Line, f.Severity, f.Message, f.Fix))
		}
	}
	wantNIP := `/etc/cron.d/nopath:1 warning db-dump is in /usr/local/bin, which cron's PATH=/usr/bin:/bin lacks: the job fails with "not found"; ` +
		`write /usr/local/bin/db-dump in full, or add PATH=/usr/local/bin:/usr/bin:/bin above the line`
	if strings.Join(notInPath, "\n") != wantNIP {
		t.Errorf("not_in_path findings:\n%s\nwant\n%s", strings.Join(notInPath, "\n"), wantNIP)
	}
}

// TestSharedLockThroughLink: /var/lock/x and /run/lock/x are one file where
// /var/lock links to /run/lock.
func TestSharedLockThroughLink(t *testing.T) {
	root := writeTree(t, map[string]string{
		"/var/lock":   "->../run/lock",
		"/run/lock/x": "",
		"/etc/cron.d/a": "0 1 * * * root timeout 1h flock -n /var/lock/app.lock /bin/a\n" +
			"0 2 * * * root timeout 1h flock -n /run/lock/app.lock /bin/b\n" +
			"0 3 * * * root timeout 1h flock -n /run/lock/other.lock /bin/c\n",
	})
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range Check(h, Options{Now: now}) {
		if f.Kind == KindSharedLock {
			got = append(got, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Message))
		}
	}
	want := "/etc/cron.d/a:2 shares lock /run/lock/app.lock with a (/etc/cron.d/a:1): one job's run makes the other skip"
	if strings.Join(got, "\n") != want {
		t.Errorf("shared locks:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}

func TestMergeJSON(t *testing.T) {
	h, _ := readFixture(t, "cronie")
	user := []byte("jobs:\n  - name: logrotate\n    on_calendar: daily\n")
	out, err := Generate(h, GenerateOptions{Merge: user, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	cfg := parseConfig(t, out)
	if len(cfg.Jobs) != len(h.Jobs) {
		t.Errorf("%d jobs, want %d (logrotate kept, the others added)", len(cfg.Jobs), len(h.Jobs))
	}
}

func BenchmarkScan(b *testing.B) {
	w := Watched{Jobs: map[string]bool{"backup": true}}
	for b.Loop() {
		if _, err := Scan(filepath.Join("testdata", "debian"), nil, w, Options{Now: now}); err != nil {
			b.Fatal(err)
		}
	}
}
