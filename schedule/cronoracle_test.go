package schedule

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// The oracle for cron is the real Debian cron (package cron) and its
// crontab, run as root in a private mount namespace (unshare -m) with bind
// mounts over /etc/cron.d, /etc/crontab, /var/spool/cron and /run, so that
// neither touches a cron of the machine; cron runs under libfaketime
// (package faketime) with an accelerated clock. The tests skip, saying
// why, under -short and when not root or unshare -m fails; they fail when
// cron, crontab or faketime is missing.
//
// JOBWATCH_CRON_ORACLE=long runs every DST night in cronNights instead of
// the two the suite runs by default (docs/schedules.md, "Testing"); -short
// runs none.

const (
	cronBin      = "/usr/sbin/cron"
	crontabBin   = "/usr/bin/crontab"
	faketimeLib  = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
	cronOracleEV = "JOBWATCH_CRON_ORACLE"
)

func needCronOracle(t *testing.T) {
	t.Helper()
	testproc.SkipShort(t, "the real cron under faketime")
	if os.Geteuid() != 0 {
		t.Skip("cron oracle skipped: needs root (cron and mount namespaces)")
	}
	for _, p := range []string{cronBin, crontabBin} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s not found: install the Debian package cron", p)
		}
	}
	testproc.Program(t, "faketime", "faketime")
	testproc.Program(t, "unshare", "util-linux")
	if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("cron oracle skipped: unshare -m fails here: %v: %s", err, out)
	}
}

// inNamespace runs script with sh in a new private mount namespace.
func inNamespace(script string) *exec.Cmd {
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "/bin/sh", "-ec", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// TestCronOracleSyntax installs one crontab line per expression with the
// real crontab(1) and checks that ParseCron accepts exactly what it accepts
// (lines that never fire aside, which we reject on purpose).
func TestCronOracleSyntax(t *testing.T) {
	needCronOracle(t)
	exprs := []string{
		"0 12 1 * 6-0", "5-3 * * * *", "0 0 * feb-jan *", "*/5-10 * * * *", "@DAILY", "@daily", "@Daily",
		"@annually", "@midnight", "@yearly", "@weekly", "@monthly", "@hourly", "@every",
		"0 0 * * 7", "0 0 * * 8", "0-60 * * * *", "*/0 * * * *", "1/5 * * * *", "0 0 * * sun-sat",
		"0 0 * * 0-7", "0 0 * * mon-sun", "00000 * * * *", "5-3/2 * * * *", "0 0 1,,2 * *", "0 0 * JAN *",
		"0 0 * January *", "*/5,7 * * * *", "1-5-7 * * * *", "a * * * *", "-5 * * * *", "0 0 0 * *",
		"0 24 * * *", "5/ * * * *", "*/60 * * * *", "*/100 * * * *", "1-5x * * * *", "1x * * * *",
		"*/5x * * * *", "1,2x * * * *", "1-5,x * * * *", "x1 * * * *", "0 0 * * mon-fri/2", "0 0 * * 7-7",
		"0 0 * * sun-7", "0 0 * * 0-7/2", "*/5/2 * * * *", "1-5/2/3 * * * *", "*-5 * * * *", "**/5 * * * *",
		"*,5 * * * *", "5,* * * * *", "*/5,*/7 * * * *", "1-2-3-4 * * * *", "1-x * * * *", "0-59/0 * * * *",
		"0 0 * * Sun", "0 0 * * sUn", "0 0 * 1-jan *", "1-5/ * * * *", "1-5/x * * * *", "1-/5 * * * *",
		"60 * * * *", "059 * * * *", "0 0 31 2 *", "0 0 * * 1/2", "1- * * * *", "*/-5 * * * *",
		"*/5- * * * *", "0 0 * * sunday", "*/ * * * *", "*x * * * *", "70-3 * * * *", "99-0 * * * *",
		"5-70 * * * *", "0 0 * 13-1 *", "0 0 * * 8-1", "1-5-7,30 * * * *", "000000000000000000000000001 * * * *",
		"0 0 * * 7/2", "0 0 * jan/2 *", "0 0 * jan-dec/2 *", "0 0 1-31/40 * *", "*/1000 * * * *",
		"0 0 * * mon-fri,sat-sun", "5-3/0 * * * *", "1,2/5 * * * *", "1-5/3-8 * * * *", "0 0 * * 5#2",
		"0 0 * * 5x", "0 0 1x * *", "0 0 * 1x *", "0 1x * * *", "0 0 * * 5#", "0 0 * * 5-6#2", "0 0 * * 5,6x",
		"0 0 * * */2x", "0 0 * * monx", "0 0 * jan1 *", "0 0 * * 5/x", "0 0 * * 5-", "0 0 * * 5?", "0 0 * * 5.",
		"L * * * *", "? * * * *", "0 0 L * *", "1, * * * *", "0 12 * * 6-0",
	}
	dir := t.TempDir()
	var script strings.Builder
	fmt.Fprintf(&script, "mkdir -p %[1]s/spool/crontabs\nchgrp crontab %[1]s/spool/crontabs\nchmod 1730 %[1]s/spool/crontabs\nmount --bind %[1]s/spool /var/spool/cron\n", dir)
	for i, e := range exprs {
		f := filepath.Join(dir, fmt.Sprintf("ct%d", i))
		if err := os.WriteFile(f, []byte(e+" true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "if %s %s </dev/null >/dev/null 2>&1; then echo %d ok; else echo %d bad; fi\n", crontabBin, f, i, i)
	}
	out, err := inNamespace(script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("crontab in a namespace: %v: %s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2*len(exprs) {
		t.Fatalf("crontab printed %d words for %d lines:\n%s", len(lines), len(exprs), out)
	}
	for i, e := range exprs {
		cronOK := lines[2*i+1] == "ok"
		_, err := ParseCron(e, time.UTC, Debian)
		switch {
		case cronOK && err != nil && strings.Contains(err.Error(), "never fires"):
			// rejected on purpose: nothing of it can be expected
		case cronOK != (err == nil):
			t.Errorf("%q: crontab accepts=%v, we: %v", e, cronOK, err)
		}
	}
}

// cronNight is one run of the real cron across a clock change.
type cronNight struct {
	zone        string
	start, stop string // wall clock of the zone, "2006-01-02 15:04"
	speed       int    // faketime's acceleration
	long        bool   // only with JOBWATCH_CRON_ORACLE=long
}

// cronNights: the first ones run in the suite, the others with
// JOBWATCH_CRON_ORACLE=long. Each costs (stop-start)/speed of real time.
var cronNights = []cronNight{
	{zone: "Europe/Berlin", start: "2027-03-28 01:20", stop: "2027-03-28 04:10", speed: 60},
	{zone: "Europe/Berlin", start: "2027-10-31 01:40", stop: "2027-10-31 03:20", speed: 60},
	{zone: "America/New_York", start: "2027-03-14 01:20", stop: "2027-03-14 04:10", speed: 60, long: true},
	{zone: "America/New_York", start: "2027-11-07 00:20", stop: "2027-11-07 02:50", speed: 60, long: true},
	{zone: "Australia/Lord_Howe", start: "2027-10-03 01:20", stop: "2027-10-03 03:40", speed: 60, long: true},
	{zone: "Australia/Lord_Howe", start: "2027-04-04 00:50", stop: "2027-04-04 02:50", speed: 60, long: true},
	{zone: "Pacific/Chatham", start: "2027-09-26 02:00", stop: "2027-09-26 04:30", speed: 60, long: true},
	{zone: "Pacific/Chatham", start: "2027-04-04 02:20", stop: "2027-04-04 04:30", speed: 60, long: true},
	{zone: "Africa/Casablanca", start: "2027-03-14 01:20", stop: "2027-03-14 04:10", speed: 60, long: true},
	{zone: "America/Santiago", start: "2027-09-04 23:20", stop: "2027-09-05 02:10", speed: 60, long: true},
	{zone: "America/Nuuk", start: "2027-03-27 22:20", stop: "2027-03-28 01:10", speed: 60, long: true},
	{zone: "America/Sao_Paulo", start: "2018-11-03 23:20", stop: "2018-11-04 02:10", speed: 60, long: true},
	{zone: "Asia/Tehran", start: "2021-03-21 23:20", stop: "2021-03-22 02:10", speed: 60, long: true},
	{zone: "Pacific/Apia", start: "2011-12-29 22:00", stop: "2011-12-31 01:30", speed: 240, long: true},
}

// cronNightExprs run in every night; each must be valid for ParseCron.
var cronNightExprs = []string{
	"15,45 2 * * *",   // issue: two catch-up runs
	"0-59/10 2 * * *", // six
	"30 2 * * *",
	"0,30 1,2,3 * * *",
	"30 * * * *",
	"*/20 * * * *",
	"* 2 * * *",
	"5 3 * * *",
	"*/5-10 2 * * *", // read as */5
	"1-5-7,30 2 * * *",
	"30 0 * * *",
	"* 0 * * *",
	"45 1,2 * * *",
	"0 0,1 * * *",
	"CRON_TZ=Asia/Tokyo 10 2 * * *", // ignored by Debian's cron
}

func TestCronOracleDST(t *testing.T) {
	if testing.Short() {
		t.Skip("the real cron through two DST nights at 60x takes about 3 minutes of real time: not in -short (cron's DST rules are covered by the cron tests of the package; TestCronOracleSyntax still asks the real cron)")
	}
	needCronOracle(t)
	long := os.Getenv(cronOracleEV) == "long"
	ran := 0
	for _, n := range cronNights {
		if n.long && !long {
			continue
		}
		ran++
		t.Run(n.zone+" "+n.start, func(t *testing.T) {
			t.Parallel()
			runCronNight(t, n)
		})
	}
	t.Logf("%d DST nights of the real cron (%s=long for all %d)", ran, cronOracleEV, len(cronNights))
}

func runCronNight(t *testing.T, n cronNight) {
	loc := mustLoc(t, n.zone)
	start, err := time.ParseInLocation("2006-01-02 15:04", n.start, loc)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := time.ParseInLocation("2006-01-02 15:04", n.stop, loc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"crond", "spool/crontabs", "run", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tab strings.Builder
	tab.WriteString("SHELL=/bin/sh\nPATH=/usr/bin:/bin\n")
	for i, e := range cronNightExprs {
		fields := strings.Fields(e)
		if strings.HasPrefix(fields[0], "CRON_TZ=") {
			// In a crontab CRON_TZ is a line of its own; it is the last
			// job, so it affects nothing else.
			fmt.Fprintf(&tab, "%s\n", fields[0])
			e = strings.Join(fields[1:], " ")
		}
		fmt.Fprintf(&tab, "%s root date +\\%%s.\\%%N >> %s/out/%d\n", e, dir, i)
	}
	// The calibration job runs at every minute of cron's clock.
	fmt.Fprintf(&tab, "* * * * * root date +\\%%s.\\%%N >> %s/out/calibration\n", dir)
	// The sentinel tells the test that cron's clock has passed stop.
	fmt.Fprintf(&tab, "%d %d %d %d * root touch %s/out/done\n", stop.Minute(), stop.Hour(), stop.Day(), int(stop.Month()), dir)
	if err := os.WriteFile(filepath.Join(dir, "crond", "jobwatch"), []byte(tab.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crontab"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`chgrp crontab %[1]s/spool/crontabs
chmod 1730 %[1]s/spool/crontabs
mount --bind %[1]s/crond /etc/cron.d
mount --bind %[1]s/crontab /etc/crontab
mount --bind %[1]s/spool /var/spool/cron
mount --bind %[1]s/run /run
date +%%s.%%N > %[1]s/realstart
exec faketime -f '@%[2]s:00 x%[3]d' %[4]s -f
`, dir, n.start, n.speed, cronBin)
	cmd := inNamespace(script)
	cmd.Env = append(os.Environ(), "TZ="+n.zone)
	var stderr testproc.Buffer // read while cron writes it
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()

	// Wait for the sentinel; the deadline is four times the planned
	// real time, and running past it fails the test.
	budget := 4*stop.Sub(start)/time.Duration(n.speed) + 20*time.Second
	testproc.EventuallyEvery(t, budget, 200*time.Millisecond, fmt.Sprintf("cron's clock to reach %s", stop), func() error {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("cron exited early: %v: %s", err, stderr.String())
		default:
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "done")); err != nil {
			return fmt.Errorf("%v: %s", err, stderr.String())
		}
		return nil
	})
	realStart := readUnixFile(t, filepath.Join(dir, "realstart"))
	// The jobs see the real clock; cron's runs at fake time start +
	// (real - origin) * speed, where origin is when libfaketime started
	// its clock, a little after realStart (more on a loaded machine).
	// The calibration job runs just after each minute of cron's clock:
	// the smallest distance past a minute is how late realStart makes
	// every time, if cron started within a real second.
	fake := func(r float64) time.Time {
		return start.Add(time.Duration((r - realStart) * float64(n.speed) * float64(time.Second)))
	}
	calib := readRuns(t, filepath.Join(dir, "out", "calibration"))
	if len(calib) < 10 {
		t.Fatalf("calibration job ran %d times", len(calib))
	}
	lag := time.Minute
	for _, r := range calib {
		lag = min(lag, fake(r).Sub(start)%time.Minute)
	}
	if pid, err := os.Stat(filepath.Join(dir, "run", "crond.pid")); err == nil {
		if d := pid.ModTime().Sub(time.Unix(0, int64(realStart*1e9))); d > 900*time.Millisecond {
			t.Fatalf("cron took %s of real time to start: too long to tell its clock from the runs (machine overloaded?)", d)
		}
	}
	t.Logf("cron's clock: runs %s after each minute at the earliest", lag)

	// Compare the runs in [start+2m, stop-2m): cron starts handling
	// minutes after the one it starts in.
	from, to := start.Add(2*time.Minute), stop.Add(-2*time.Minute)
	for i, e := range cronNightExprs {
		s, err := ParseCron(e, loc, Debian)
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		var want []string
		var expected []time.Time // one entry per run cron should start
		for _, r := range UpcomingRuns(s, from.Add(-time.Second), 400) {
			if !r.At.Before(to) {
				break
			}
			want = append(want, runString(r.At.In(loc), r.Count))
			for range r.Count {
				expected = append(expected, r.At)
			}
		}
		// Each run cron started is matched, in order, to the earliest
		// expected run not matched yet that it follows by less than two
		// minutes of cron's clock (or precedes by less than half a minute): on a loaded machine a run may start a
		// (real) second late, which is a minute of faketime's, without
		// being another slot's run.
		var got []string
		counts := map[int64]int{}
		var order []int64
		next := 0
		ran := readRuns(t, filepath.Join(dir, "out", strconv.Itoa(i)))
		slices.Sort(ran) // runs of one minute may append out of order
		for _, r := range ran {
			at := fake(r).Add(-lag)
			if at.Before(from) || !at.Before(to) {
				continue
			}
			for next < len(expected) && at.Sub(expected[next]) >= 2*time.Minute {
				next++ // never started: it shows as missing below
			}
			// The lag is calibrated from the earliest run seen; a run a
			// little earlier still (less than half a minute of cron's
			// clock, half a real second) is that slot's.
			if next == len(expected) || at.Before(expected[next].Add(-30*time.Second)) {
				got = append(got, "unexpected "+at.In(loc).Format(time.RFC3339))
				continue
			}
			slot := expected[next]
			next++
			if counts[slot.Unix()] == 0 {
				order = append(order, slot.Unix())
			}
			counts[slot.Unix()]++
		}
		for _, u := range order {
			got = append(got, runString(time.Unix(u, 0).In(loc), counts[u]))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s %q from %s to %s:\ncron ran:\n  %s\njobwatch expects:\n  %s", n.zone, e, from.In(loc).Format(time.RFC3339), to.In(loc).Format(time.RFC3339),
				strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

func runString(t time.Time, n int) string {
	if n == 1 {
		return t.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s x%d", t.Format(time.RFC3339), n)
}

func readUnixFile(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// readRuns reads a job's output: one real Unix time a line; a job that
// never ran has no file.
func readRuns(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, err := strconv.ParseFloat(strings.TrimSpace(sc.Text()), 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}
