package cronlog

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var testRules = []Rule{{regexp.MustCompile(`/bin/ok\.sh`), "ok"}, {regexp.MustCompile(`/bin/fail\.sh`), "fail"}}

type line struct {
	tag string
	pid int
	msg string
}

// runs replays lines on host h and returns what each matched, one a line.
func runs(m *Matcher, lines ...line) string {
	var out []string
	for _, l := range lines {
		r, ok := m.Match("h", []byte(l.tag), l.pid, []byte(l.msg))
		if !ok {
			out = append(out, "-")
			continue
		}
		s := fmt.Sprintf("%d %s pid=%d", r.Kind, r.Job, r.PID)
		if r.Kind == End {
			s += " " + string(r.Result)
		}
		if r.HasExitCode {
			s += fmt.Sprintf(" exit=%d", r.ExitCode)
		}
		if r.EndUnlogged {
			s += " unlogged"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// The lines of one run, as Debian's cron logs them at each -L (which
// process logs which: see the package doc), make one run with its result.
func TestMatchLevels(t *testing.T) {
	daemon := line{"cron", 10, "(CRON) INFO (pidfile fd = 5)"}
	for _, tc := range []struct {
		name  string
		level int
		lines []line
		want  string
	}{
		{"L15: all from the child, the job's PID inside", 15, []line{
			{"CRON", 20, "(root) CMD ([21] /bin/fail.sh)"},
			{"CRON", 20, "(CRON) error (grandchild #21 failed with exit status 3)"},
			{"CRON", 20, "(root) END ([21] /bin/fail.sh)"},
		}, "1 fail pid=21; 2 fail pid=21 failure exit=3; -"},
		{"L7: CMD from the job, error and END from the child", 7, []line{
			{"CRON", 31, "(root) CMD (/bin/fail.sh)"},
			{"CRON", 33, "(root) CMD (/bin/ok.sh)"},
			{"CRON", 30, "(CRON) error (grandchild #31 failed with exit status 3)"},
			{"CRON", 30, "(root) END (/bin/fail.sh)"},
			{"CRON", 32, "(root) END (/bin/ok.sh)"},
		}, "1 fail pid=31; 1 ok pid=33; 2 fail pid=31 failure exit=3; -; 2 ok pid=33 success"},
		{"L3: no failure logged, the result is unknown", 3, []line{
			{"CRON", 41, "(root) CMD (/bin/fail.sh)"},
			{"CRON", 40, "(root) END (/bin/fail.sh)"},
		}, "1 fail pid=41; 2 fail pid=41 unknown"},
		{"L2: ends only", 2, []line{
			{"CRON", 40, "(root) END (/bin/ok.sh)"},
		}, "2 ok pid=0 unknown"},
		{"L1: starts only, their ends not logged", 1, []line{
			{"CRON", 51, "(root) CMD (/bin/ok.sh)"},
		}, "1 ok pid=51 unlogged"},
		{"level not known: unlogged until the daemon logs an end", Detect, []line{
			daemon,
			{"CRON", 61, "(root) CMD (/bin/ok.sh)"},
			{"CRON", 60, "(root) END (/bin/ok.sh)"},
			{"CRON", 63, "(root) CMD (/bin/ok.sh)"},
		}, "-; 1 ok pid=61 unlogged; 2 ok pid=61 success; 1 ok pid=63"},
		{"level not known: a daemon's restart forgets what it logged", Detect, []line{
			{"CRON", 60, "(root) END (/bin/ok.sh)"},
			daemon,
			{"CRON", 63, "(root) CMD (/bin/ok.sh)"},
		}, "2 ok pid=0 success; -; 1 ok pid=63 unlogged"},
		{"an error of a run started before the log was read waits for its END", 15, []line{
			{"CRON", 70, "(CRON) error (grandchild #71 failed with exit status 2)"},
			{"CRON", 70, "(root) END (/bin/fail.sh)"},
		}, "-; 2 fail pid=71 failure exit=2"},
		{"cronie: CMD only", Detect, []line{
			{"CROND", 81, "(root) CMD (/bin/ok.sh)"},
			{"CROND", 81, "(root) CMDOUT (done)"},
		}, "1 ok pid=81 unlogged; -"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runs(New(testRules, tc.level), tc.lines...); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A restored run's END line finds it after a restart (no PID in it
// without -L 8).
func TestRestore(t *testing.T) {
	m := New(testRules, 7)
	m.Restore("h", 91, "ok", CmdHash([]byte("/bin/ok.sh")))
	if c := m.Command("h", 91); c != CmdHash([]byte("/bin/ok.sh")) {
		t.Fatalf("command hash %x", c)
	}
	if got := runs(m, line{"CRON", 90, "(root) END (/bin/ok.sh)"}); got != "2 ok pid=91 success" {
		t.Errorf("got %s", got)
	}
}

// FuzzMatch feeds lines to one matcher: it never panics, what it returns
// is a start or an end with a PID in range, and its tables stay bounded.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{
		"CRON\x0020\x00(root) CMD ([21] /bin/fail.sh)",
		"CRON\x0020\x00(CRON) error (grandchild #21 failed with exit status 3)",
		"CRON\x0020\x00(root) END ([21] /bin/fail.sh)",
		"CRON\x0031\x00(root) CMD (/usr/local/bin/jobwatch run --job=x -- true)",
		"cron\x0010\x00(CRON) INFO (pidfile fd = 5)",
		"CROND\x0081\x00(root) CMD (/bin/ok.sh)",
	} {
		f.Add(s)
	}
	m := New(testRules, Detect)
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.SplitN(s, "\x00", 3)
		if len(parts) != 3 {
			return
		}
		pid := 0
		fmt.Sscan(parts[1], &pid)
		r, ok := m.Match("h", []byte(parts[0]), pid, []byte(parts[2]))
		if ok && (r.Kind != Start && r.Kind != End || r.PID < 0 || r.PID > 1<<22) {
			t.Fatalf("Match(%q): %+v", s, r)
		}
		if ok && r.Kind == End && r.Result != Success && r.Result != Failure && r.Result != Unknown {
			t.Fatalf("Match(%q): result %q", s, r.Result)
		}
		if open, failed, ended, hosts := m.StateSize(); max(open, failed, ended, hosts) > MaxRuns {
			t.Fatalf("state grew past %d", MaxRuns)
		}
	})
}

// EXTRA_OPTS of /etc/default/cron, as the shell and systemd read it.
func TestLevelOfDefaults(t *testing.T) {
	for _, tc := range []struct {
		text  string
		level int
		ok    bool
	}{
		{"# EXTRA_OPTS='-L 5'\n#EXTRA_OPTS=\"\"\n", 1, false}, // bookworm's, all commented out
		{`EXTRA_OPTS="-L 15"`, 15, true},
		{"EXTRA_OPTS='-l -L 7'\n", 7, true},
		{"EXTRA_OPTS=-L3\n", 3, true},
		{"EXTRA_OPTS=\"-L 15\"\nEXTRA_OPTS=\"-l\"\n", 1, false}, // the last assignment holds
		{`EXTRA_OPTS="-L 99"`, 1, false},
	} {
		if l, ok := LevelOfDefaults([]byte(tc.text)); l != tc.level || ok != tc.ok {
			t.Errorf("%q: %d %v, want %d %v", tc.text, l, ok, tc.level, tc.ok)
		}
	}
}
