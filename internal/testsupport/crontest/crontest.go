// Package crontest runs the real Debian cron for tests: in a private mount
// and UTS namespace (its own /etc/cron.d, /etc/crontab, /var/spool/cron,
// /run, and a /dev of its own whose /dev/log is an rsyslogd's that writes
// cron's lines to a file), under faketime so that jobs of every minute run
// every second.
package crontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Hostname is the host name cron runs under (and logs).
const Hostname = "cronhost"

// Need skips, saying why, under go test -short and unless the real Debian
// cron can run here in a private namespace (root, and unshare working); it
// fails the test when cron, rsyslogd or faketime is missing (packages cron,
// rsyslog, faketime; scripts/test.sh installs them).
func Need(t *testing.T) {
	t.Helper()
	testproc.SkipShort(t, "the real cron, rsyslogd and faketime")
	if os.Geteuid() != 0 {
		t.Skip("real cron skipped: needs root (cron and mount namespaces)")
	}
	for _, p := range []string{"/usr/sbin/cron", "/usr/sbin/rsyslogd"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s not found: install the Debian packages cron and rsyslog", p)
		}
	}
	testproc.Program(t, "faketime", "faketime")
	testproc.Program(t, "unshare", "util-linux")
	if out, err := exec.Command("unshare", "-m", "-u", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("real cron skipped: unshare -m -u fails here: %v: %s", err, out)
	}
}

// Cron is a running cron.
type Cron struct {
	// Dir is its directory: bin/ holds the scripts Run was given.
	Dir string
	// Log is the file rsyslogd writes cron's lines to.
	Log     string
	cmd     *exec.Cmd
	exited  chan error
	stderr  *testproc.Buffer
	stopped bool
}

// Run starts cron -f -L level (no -L for level < 0) with crontab as
// /etc/cron.d/jobwatch; %[1]s in it is the cron's directory, whose bin/
// holds scripts (name -> text, made executable). traditional: rsyslog's
// traditional file format ("Dec  1 09:53:56", no year), else its default
// (RFC 3339). Stop, or the test's end, kills it.
func Run(t *testing.T, level int, crontab string, scripts map[string]string, traditional bool) *Cron {
	t.Helper()
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
	for name, text := range scripts {
		write("bin/"+name, text, 0o755)
	}
	write("crond/jobwatch", strings.ReplaceAll(crontab, "%[1]s", dir), 0o644)
	write("crontab", "", 0o644)
	c := &Cron{Dir: dir, Log: filepath.Join(dir, "work", "cron.log"), exited: make(chan error, 1), stderr: &testproc.Buffer{}}
	template := ""
	if traditional {
		template = ` template="RSYSLOG_TraditionalFileFormat"`
	}
	write("rsyslog.conf", fmt.Sprintf(`global(workDirectory=%q)
module(load="imuxsock" SysSock.UseSysTimeStamp="off")
cron.* action(type="omfile" file=%q%s)
`, filepath.Join(dir, "work"), c.Log, template), 0o644)
	opt := ""
	if level >= 0 {
		opt = fmt.Sprintf(" -L %d", level)
	}
	script := fmt.Sprintf(`hostname %[2]s
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
TZ=UTC exec faketime -f '@2026-12-01 09:59:50 x60' /usr/sbin/cron -f%[3]s
`, dir, Hostname, opt)
	c.cmd = exec.Command("unshare", "-m", "-u", "--propagation", "private", "/bin/sh", "-ec", script)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stdout, c.cmd.Stderr = c.stderr, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(c.Stop)
	return c
}

// WaitLines waits until the log holds n lines that contain every one of
// words, failing the test if cron exits first or a minute passes.
func (c *Cron) WaitLines(t *testing.T, n int, words ...string) {
	t.Helper()
	testproc.Eventually(t, 60*time.Second, fmt.Sprintf("cron to log %d lines with %q", n, words), func() error {
		select {
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("cron exited: %v: %s", err, c.stderr.String())
		default:
		}
		if got := Count(c.Lines(), words...); got < uint64(n) {
			return fmt.Errorf("%d lines: %s", got, c.stderr.String())
		}
		return nil
	})
}

// Stop kills cron, rsyslogd and the jobs (the whole process group).
func (c *Cron) Stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
}

// Lines are the lines of the log so far.
func (c *Cron) Lines() []string {
	data, _ := os.ReadFile(c.Log)
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Count is how many of lines contain every one of words.
func Count(lines []string, words ...string) uint64 {
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
