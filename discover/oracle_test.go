package discover

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/schedule"
)

// The OnCalendar expressions of the fixture trees are checked against
// systemd-analyze calendar (Debian package systemd, as in schedule's
// oracle tests): the next runs jobwatch expects for each generated job must
// be systemd's, from the fixtures' start instant and around each DST change
// of the job's zone. The test skips only where systemd-analyze is absent.

var analyzeLine = regexp.MustCompile(`^\s*(?:Next elapse|Iter\. #\d+|\(in UTC\)): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC$`)

func analyze(t *testing.T, bin, tz, expr string, base time.Time, n int) []time.Time {
	t.Helper()
	cmd := exec.Command(bin, "calendar", "--iterations="+strconv.Itoa(n),
		"--base-time=@"+strconv.FormatInt(base.Unix(), 10), "--", expr)
	cmd.Env = append(os.Environ(), "TZ="+tz, "SYSTEMD_COLORS=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("systemd-analyze calendar %q: %v: %s", expr, err, errb.String())
	}
	var runs []time.Time
	for _, line := range strings.Split(out.String(), "\n") {
		if m := analyzeLine.FindStringSubmatch(line); m != nil {
			ts, err := time.Parse("2006-01-02 15:04:05", m[1])
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, ts)
		}
	}
	if len(runs) == 0 {
		t.Fatalf("systemd-analyze calendar %q printed no elapse:\n%s", expr, out.String())
	}
	return runs
}

func TestOnCalendarOracle(t *testing.T) {
	bin := testproc.Program(t, "systemd-analyze", "systemd")
	checked := 0
	for _, name := range fixtures {
		h, _ := readFixture(t, name)
		// Every timer of the tree, enabled or not.
		sd := &systemd{root: filepath.Join("testdata", name)}
		timers, _ := sd.timerNames()
		zone := h.Zone
		for _, tn := range timers {
			u, _ := sd.readUnit(tn)
			if u == nil {
				continue
			}
			for _, s := range u.vals["Timer.OnCalendar"] {
				expr := s.Value
				t.Run(name+"/"+tn+"/"+expr, func(t *testing.T) {
					loc, err := time.LoadLocation(zone)
					if err != nil {
						t.Fatal(err)
					}
					sched, err := schedule.ParseOnCalendar([]string{expr}, loc)
					if err != nil {
						t.Fatalf("%s:%d: %v", s.File, s.Line, err)
					}
					bases := []time.Time{now}
					for _, tr := range transitions(loc, now) {
						bases = append(bases, tr.at.Add(-36*time.Hour))
					}
					for _, base := range bases {
						want := analyze(t, bin, zone, expr, base, 6)
						got := schedule.Upcoming(sched, base, len(want))
						if len(got) != len(want) {
							t.Fatalf("from %s: %d runs, systemd %d", base, len(got), len(want))
						}
						for i := range want {
							if !got[i].Equal(want[i]) {
								t.Errorf("from %s: run %d at %s, systemd-analyze says %s", base, i, got[i].UTC(), want[i])
							}
						}
					}
				})
				checked++
			}
		}
	}
	if checked < 6 {
		t.Errorf("only %d OnCalendar expressions in the fixtures", checked)
	}
}
