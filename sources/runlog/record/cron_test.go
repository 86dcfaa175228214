package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/model"
)

// cronCommands map the commands of testdata/cron's crontab.
var cronCommands = []Command{
	{Match: `/bin/backup\.sh`, Job: "backup"},
	{Match: `/bin/fail\.sh`, Job: "cleanup"},
	{Match: `/bin/slow\.sh`, Job: "slow"},
}

var cronNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newTestCron(t testing.TB) *Cron {
	t.Helper()
	c, err := NewCron(cronCommands, time.UTC, func() time.Time { return cronNow })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCronGolden parses the lines the real Debian cron wrote through
// rsyslog at each -L level (testdata/cron/README.md), and cronie's, and
// compares the events with testdata/cron/<name>.golden. Each L<n> file is
// read twice: with cron_log_level n, and with the level not known (told
// from the lines, "<name>.detect.golden").
func TestCronGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/cron/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".log")
		level := -1
		if l, _, ok := strings.Cut(strings.TrimPrefix(base, "L"), "-"); ok && strings.HasPrefix(base, "L") {
			level, _ = strconv.Atoi(l)
		}
		for _, detect := range []bool{false, true} {
			name := base
			if detect && level >= 0 {
				name += ".detect"
			} else if detect {
				continue
			}
			golden(t, f, name, level, detect)
		}
	}
}

// golden parses fixture f (at level, unless detect) and compares the
// events with testdata/cron/<name>.golden.
func golden(t *testing.T, f, name string, level int, detect bool) {
	t.Run(name, func(t *testing.T) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := newTestCron(t)
		if !detect && level >= 0 {
			p.SetLevel(level)
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(in))
		for sc.Scan() {
			var ev model.Event
			switch err := p.Parse(sc.Bytes(), &ev); {
			case errors.Is(err, ErrNoMatch), errors.Is(err, ErrEmpty):
				fmt.Fprintf(&out, "skip\n")
			case err != nil:
				fmt.Fprintf(&out, "error %v\n", err)
			default:
				fmt.Fprintf(&out, "event %s\n", formatEvent(ev))
			}
		}
		goldenFile := filepath.Join("testdata", "cron", name+".golden")
		if *update {
			if err := os.WriteFile(goldenFile, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(goldenFile)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("output differs from %s (run with -update to rewrite):\n%s", goldenFile, out.String())
		}
	})
}

// cronRuns replays lines and returns, per job, "starts/successes/failures".
func cronRuns(t *testing.T, p *Cron, lines ...string) map[string]string {
	t.Helper()
	type counts struct{ start, ok, fail int }
	m := map[string]*counts{}
	for _, l := range lines {
		var ev model.Event
		if err := p.Parse([]byte(l), &ev); err != nil {
			if !errors.Is(err, ErrNoMatch) {
				t.Fatalf("%q: %v", l, err)
			}
			continue
		}
		c := m[ev.Job]
		if c == nil {
			c = &counts{}
			m[ev.Job] = c
		}
		switch {
		case ev.Kind == model.Start:
			c.start++
		case ev.Result == model.Success:
			c.ok++
		default:
			c.fail++
		}
	}
	out := map[string]string{}
	for j, c := range m {
		out[j] = fmt.Sprintf("%d/%d/%d", c.start, c.ok, c.fail)
	}
	return out
}

func TestCronRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string
	}{
		{"L15: a failure is one run, not a failure and a success", []string{
			"Dec  1 09:53:56 web1 CRON[20507]: (root) CMD ([20511] /x/bin/fail.sh --verbose)",
			"Dec  1 09:53:56 web1 CRON[20507]: (CRON) error (grandchild #20511 failed with exit status 3)",
			"Dec  1 09:53:56 web1 CRON[20507]: (root) END ([20511] /x/bin/fail.sh --verbose)",
		}, map[string]string{"cleanup": "1/0/1"}},
		{"L7: linked by the job's pid and the cron child's", []string{
			"Dec  1 09:54:29 web1 CRON[21655]: (root) CMD (/x/bin/fail.sh)",
			"Dec  1 09:54:29 web1 CRON[21660]: (root) CMD (/x/bin/backup.sh)",
			"Dec  1 09:54:29 web1 CRON[21652]: (CRON) error (grandchild #21655 failed with exit status 1)",
			"Dec  1 09:54:29 web1 CRON[21652]: (root) END (/x/bin/fail.sh)",
			"Dec  1 09:54:31 web1 CRON[21657]: (root) END (/x/bin/backup.sh)",
		}, map[string]string{"cleanup": "1/0/1", "backup": "1/1/0"}},
		{"an error of a run started before the log was read waits for its END", []string{
			"Dec  1 09:53:56 web1 CRON[20507]: (CRON) error (grandchild #20511 failed with exit status 3)",
			"Dec  1 09:53:56 web1 CRON[20507]: (root) END ([20511] /x/bin/fail.sh --verbose)",
		}, map[string]string{"cleanup": "0/0/1"}},
		{"jobwatch run maps itself; other commands are no job", []string{
			"Dec  1 09:53:56 web1 CRON[1]: (root) CMD ([2] /usr/local/bin/jobwatch run --job report --log /x -- /bin/true)",
			"Dec  1 09:53:56 web1 CRON[3]: (root) CMD ([4] jobwatch run --timeout=1h --job=nightly -- /bin/true)",
			"Dec  1 09:53:56 web1 CRON[5]: (root) CMD ([6] /bin/false)",
			"Dec  1 09:53:56 web1 CRON[7]: (root) CMD ([8] /bin/echo jobwatch run -- --job fake)",
		}, map[string]string{"report": "1/0/0", "nightly": "1/0/0", "": "2/0/0"}},
		{"a log of two hosts: the same pids are other processes", []string{
			"Dec  1 09:54:29 web1 CRON[100]: (root) CMD (/x/bin/fail.sh)",
			"Dec  1 09:54:29 web2 CRON[100]: (root) CMD (/x/bin/backup.sh)",
			"Dec  1 09:54:29 web1 CRON[99]: (CRON) error (grandchild #100 failed with exit status 1)",
			"Dec  1 09:54:29 web2 CRON[99]: (root) END (/x/bin/backup.sh)",
			"Dec  1 09:54:29 web1 CRON[99]: (root) END (/x/bin/fail.sh)",
		}, map[string]string{"cleanup": "1/0/1", "backup": "1/1/0"}},
		{"first match wins", []string{
			"2026-12-01T09:53:56.735176+00:00 web1 CRON[1]: (root) CMD ([2] /x/bin/backup.sh /x/bin/fail.sh)",
		}, map[string]string{"backup": "1/0/0"}},
		{"other programs and cron's other lines are skipped", []string{
			"Dec  1 09:53:56 web1 cron[20491]: (CRON) INFO (pidfile fd = 5)",
			"Dec  1 09:53:56 web1 sshd[20491]: (root) CMD (/x/bin/backup.sh)",
			"Dec  1 10:05:02 db1 CROND[4799]: (root) CMDOUT (backup done)",
			"Dec  1 10:05:02 db1 CRON[4799]: (root) MAIL (mailed 1 byte of output; but got status 0x004b, #012)",
			"Dec  1 10:05:02 db1 CRON[4799]: (CRON) error (grandchild #x failed with exit status 1)",
		}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cronRuns(t, newTestCron(t), tc.lines...)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
		})
	}
}

// A traditional timestamp has no year: it gets the one that puts it last
// before now (a day of skew allowed), so December's lines read in January
// are of the year before.
func TestCronYear(t *testing.T) {
	for _, tc := range []struct {
		now  time.Time
		line string
		want string
	}{
		{time.Date(2027, 1, 1, 0, 5, 0, 0, time.UTC), "Dec 31 23:59:01 h CRON[1]: (root) CMD (/x/bin/backup.sh)", "2026-12-31T23:59:01Z"},
		{time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), "Dec  1 09:53:56 h CRON[1]: (root) CMD (/x/bin/backup.sh)", "2026-12-01T09:53:56Z"},
		{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), "Jun  3 00:00:00 h CRON[1]: (root) CMD (/x/bin/backup.sh)", "2025-06-03T00:00:00Z"},
	} {
		p, err := NewCron(cronCommands, time.UTC, func() time.Time { return tc.now })
		if err != nil {
			t.Fatal(err)
		}
		var ev model.Event
		if err := p.Parse([]byte(tc.line), &ev); err != nil {
			t.Fatal(err)
		}
		if got := ev.Time.Format(time.RFC3339); got != tc.want {
			t.Errorf("%q at %s: %s, want %s", tc.line, tc.now, got, tc.want)
		}
	}
}

// The parser's state stays bounded whatever it reads.
func TestCronStateBounded(t *testing.T) {
	p := newTestCron(t)
	var ev model.Event
	for i := 1; i <= 3*cronlog.MaxRuns; i++ {
		p.Parse([]byte(fmt.Sprintf("Dec  1 09:00:00 h CRON[%d]: (root) CMD ([%d] /x/bin/backup.sh)", i, i)), &ev)
		p.Parse([]byte(fmt.Sprintf("Dec  1 09:00:00 h CRON[%d]: (CRON) error (grandchild #%d failed with exit status 1)", i, i+1)), &ev)
	}
	if open, failed, ended, hosts := p.match.StateSize(); max(open, failed, ended, hosts) > cronlog.MaxRuns {
		t.Errorf("state: %d open, %d failed, %d ended, %d hosts; bound %d", open, failed, ended, hosts, cronlog.MaxRuns)
	}
}
