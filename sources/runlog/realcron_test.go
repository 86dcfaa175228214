package runlog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// needRealCron skips, saying why, unless the real Debian cron can run here
// in a private namespace: root, unshare, cron, rsyslogd and faketime
// (packages cron, rsyslog, faketime; scripts/test.sh installs them).
func needRealCron(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real cron")
	}
	if os.Geteuid() != 0 {
		t.Skip("real cron skipped: needs root (cron and mount namespaces)")
	}
	for _, p := range []string{"/usr/sbin/cron", "/usr/sbin/rsyslogd"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("real cron skipped: %s not found (Debian packages cron, rsyslog)", p)
		}
	}
	for _, p := range []string{"faketime", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("real cron skipped: %s not found", p)
		}
	}
	if out, err := exec.Command("unshare", "-m", "-u", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("real cron skipped: unshare -m -u fails here: %v: %s", err, out)
	}
}

// TestRunLogRealCron runs the real Debian cron -L 15 with rsyslog writing
// cron's lines to a file, in a private mount and UTS namespace (its own
// /etc/cron.d, /etc/crontab, /var/spool/cron, /run, and a /dev of its own
// whose /dev/log is rsyslog's), under faketime so that jobs of every minute
// run every second; then reads that file with format cron into a real
// tracker and checks every run against the lines.
func TestRunLogRealCron(t *testing.T) {
	needRealCron(t)
	dir := t.TempDir()
	for _, d := range []string{"crond", "spool/crontabs", "run", "olddev", "bin", "work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/ok.sh", "#!/bin/sh\nexit 0\n", 0o755)
	write("bin/fail.sh", "#!/bin/sh\necho failing >&2\nexit 3\n", 0o755)
	// Stands for jobwatch run: only the command cron logs matters here.
	write("bin/jobwatch", "#!/bin/sh\nexit 0\n", 0o755)
	write("crond/jobwatch", fmt.Sprintf(`SHELL=/bin/sh
PATH=/usr/bin:/bin
MAILTO=""
* * * * * root %[1]s/bin/ok.sh
* * * * * root %[1]s/bin/fail.sh --verbose
* * * * * root %[1]s/bin/jobwatch run --job report -- /bin/true
* * * * * root /bin/false
`, dir), 0o644)
	write("crontab", "", 0o644)
	logPath := filepath.Join(dir, "work", "cron.log")
	write("rsyslog.conf", fmt.Sprintf(`global(workDirectory=%q)
module(load="imuxsock")
cron.* action(type="omfile" file=%q)
`, filepath.Join(dir, "work"), logPath), 0o644)
	script := fmt.Sprintf(`hostname cronhost
mount --bind /dev %[1]s/olddev
mount -t tmpfs -o mode=755 tmpfs /dev
for n in null zero full random urandom tty; do touch /dev/$n; mount --bind %[1]s/olddev/$n /dev/$n; done
ln -s /proc/self/fd /dev/fd
mkdir /dev/shm; mount -t tmpfs -o mode=1777 tmpfs /dev/shm
chgrp crontab %[1]s/spool/crontabs; chmod 1730 %[1]s/spool/crontabs
mount --bind %[1]s/crond /etc/cron.d
mount --bind %[1]s/crontab /etc/crontab
mount --bind %[1]s/spool /var/spool/cron
mount --bind %[1]s/run /run
rsyslogd -n -f %[1]s/rsyslog.conf -i %[1]s/work/rsyslogd.pid &
i=0; while [ ! -S /dev/log ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
TZ=UTC exec faketime -f '@2026-12-01 09:59:50 x60' /usr/sbin/cron -f -L 15
`, dir)
	cmd := exec.Command("unshare", "-m", "-u", "--propagation", "private", "/bin/sh", "-ec", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &testproc.Buffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stopCron := func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	defer stopCron()

	// Wait for five failing runs to have ended (five fake minutes).
	testproc.Eventually(t, 60*time.Second, "cron to log 5 minutes of runs", func() error {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("cron exited: %v: %s", err, stderr.String())
		default:
		}
		data, _ := os.ReadFile(logPath)
		if strings.Count(string(data), "END ([") >= 4*5 {
			return nil
		}
		return fmt.Errorf("%s\n%s", stderr.String(), data)
	})
	stopCron()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	t.Logf("%d lines of the real cron, e.g.:\n%s", len(lines), strings.Join(lines[:min(8, len(lines))], "\n"))
	count := func(words ...string) uint64 {
		n := uint64(0)
		for _, l := range lines {
			ok := true
			for _, w := range words {
				ok = ok && strings.Contains(l, w)
			}
			if ok {
				n++
			}
		}
		return n
	}

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
