package packaging

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// container is a Debian root booted with systemd as its PID 1 by
// systemd-nspawn, with no network of its own (--private-network): the
// test reaches it by entering its namespaces with nsenter.
type container struct {
	t      *testing.T
	name   string
	root   string
	log    string
	unsh   *exec.Cmd
	done   chan struct{}
	leader int // the container's PID 1, as the host sees it
}

// bootContainer copies the cached root, lets prepare change the copy, and
// boots it with the directory mnt bound read-only at /mnt/jobwatch. Every
// process it starts ends when the test does, on failure and timeout too:
// nspawn runs as PID 1 of a PID namespace of its own (unshare --pid
// --fork --kill-child), which the kernel empties, the container included,
// when nspawn dies; nspawn dies with unshare, and unshare with the test
// process (Pdeathsig). Its mounts live in nspawn's mount namespaces.
func bootContainer(t *testing.T, cached, name, mnt string, prepare func(root string)) *container {
	t.Helper()
	dir := containerDir(t, name)
	c := &container{t: t, name: name, root: filepath.Join(dir, "root"), log: filepath.Join(dir, "console.log"), done: make(chan struct{})}
	copyRoot(t, cached, c.root)
	prepare(c.root)
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.unsh = exec.Command("unshare", "--pid", "--fork", "--kill-child", "--",
		"systemd-nspawn", "--boot", "--register=no", "--keep-unit", "--private-network",
		"--directory="+c.root, "--machine="+name, "--bind-ro="+mnt+":/mnt/jobwatch")
	c.unsh.Stdout, c.unsh.Stderr = logf, logf
	dieWithTest(c.unsh)
	if err := c.unsh.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.unsh.Wait(); close(c.done) }()
	t.Cleanup(c.stop)
	testproc.Eventually(t, 2*time.Minute, "the container's systemd", c.findLeader)
	testproc.Eventually(t, 3*time.Minute, "the container booted", func() error {
		out, err := c.run("systemctl", "is-system-running", "--wait")
		if s := strings.TrimSpace(out); s == "running" || s == "degraded" {
			if s == "degraded" {
				failed, _ := c.run("systemctl", "--failed", "--no-legend")
				t.Logf("%s booted degraded:\n%s", name, failed)
			}
			return nil
		}
		return fmt.Errorf("%s: %v", out, err)
	})
	return c
}

// containerPrefix starts the names of the test's containers, which end in
// the test process's PID: jwboot-l1-1234.
const containerPrefix = "jwboot-"

// containerDir is a directory for the container name's root copy, in the
// Debian root's cache directory (beside the root: a reflink copy when the
// file system can), removed when the test ends. A test killed by go test's
// -timeout runs no cleanup: sweepContainers removes what it left at the
// next run.
func containerDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(debianCacheDir(), "containers", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the container has stopped: cleanups run last in, first out
	return dir
}

// sweepContainers removes what containers of test processes no longer
// alive left: their root copies and nspawn's propagation directories.
func sweepContainers(t *testing.T) {
	t.Helper()
	for _, parent := range []string{filepath.Join(debianCacheDir(), "containers"), "/run/systemd/nspawn/propagate"} {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			n := e.Name()
			i := strings.LastIndexByte(n, '-')
			pid, err := strconv.Atoi(n[i+1:])
			if !strings.HasPrefix(n, containerPrefix) || err != nil || syscall.Kill(pid, 0) == nil {
				continue
			}
			if err := os.RemoveAll(filepath.Join(parent, n)); err != nil {
				t.Logf("removing what a killed test left: %v", err)
			}
		}
	}
}

// findLeader finds the container's PID 1: systemd, nspawn's child.
func (c *container) findLeader() error {
	select {
	case <-c.done:
		out, _ := os.ReadFile(c.log)
		c.t.Fatalf("systemd-nspawn exited: %v\n%s", c.unsh.ProcessState, tail(string(out), 30))
	default:
	}
	for _, nspawn := range testproc.Children(c.unsh.Process.Pid) {
		for _, p := range testproc.Children(nspawn) {
			if testproc.Comm(p) == "systemd" {
				c.leader = p
				return nil
			}
		}
	}
	return fmt.Errorf("no systemd under unshare %d yet", c.unsh.Process.Pid)
}

// stop powers the container off (nspawn's SIGTERM), killing it when that
// takes more than a minute, and removes what nspawn leaves in /run.
func (c *container) stop() {
	if c.t.Failed() && c.leader != 0 {
		for _, args := range [][]string{
			{"journalctl", "--no-pager", "-n", "150", "-u", "jobwatch"},
			{"journalctl", "--no-pager", "-n", "60", "-u", "cron"},
			{"systemctl", "--no-pager", "list-timers", "--all"},
			// What the journal source read of the timers' runs, with the
			// fields it reads, to tell a run systemd failed from one
			// jobwatch took for failed.
			{"journalctl", "--no-pager", "-n", "120", "-o", "json", "--output-fields=" + timerFields,
				"UNIT=timer-ok.service", "UNIT=timer-fail.service"},
		} {
			out, err := c.run(args...)
			c.t.Logf("%s: %s (%v):\n%s", c.name, strings.Join(args, " "), err, out)
		}
		for _, job := range []string{"timer-ok", "timer-fail"} {
			out, err := c.get("/api/v1/jobs/" + job)
			c.t.Logf("%s: /api/v1/jobs/%s (%v):\n%s", c.name, job, err, out)
		}
	}
	for _, p := range testproc.Children(c.unsh.Process.Pid) {
		syscall.Kill(p, syscall.SIGTERM)
	}
	select {
	case <-c.done:
	case <-time.After(time.Minute): // a bound for a container that does not power off
		c.unsh.Process.Kill()
		<-c.done
	}
	os.RemoveAll(filepath.Join("/run/systemd/nspawn/propagate", c.name))
	if fi, err := os.Stat(c.root); err == nil {
		st := fi.Sys().(*syscall.Stat_t)
		os.Remove(fmt.Sprintf("/run/systemd/nspawn/locks/inode-%d:%d", st.Dev, st.Ino))
	}
}

// timerFields are the journal fields of the service manager's entries
// about a run that the failure dump shows.
const timerFields = "MESSAGE_ID,MESSAGE,INVOCATION_ID,JOB_TYPE,JOB_RESULT,UNIT_RESULT,EXIT_CODE,EXIT_STATUS,_PID"

// containerEnv is the environment commands run with in the container.
var containerEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive", "SYSTEMD_PAGER=", "TERM=dumb", "HOME=/root",
}

// run runs a command in the container (all its namespaces, as root) and
// returns its standard output; the error holds its standard error.
func (c *container) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(c.leader), "--all", "--wd=/", "--"}, args...)...)
	cmd.Env = containerEnv
	cmd.WaitDelay = 5 * time.Second
	dieWithTest(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// sh runs a shell command in the container, failing the test when it fails.
func (c *container) sh(script string) string {
	c.t.Helper()
	out, err := c.run("sh", "-c", script)
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", c.name, err, out)
	}
	return out
}

// get is a page of jobwatch in the container (curl from inside: the
// container has a network of its own).
func (c *container) get(path string) (string, error) {
	return c.run("curl", "-fsS", "--max-time", "30", "http://127.0.0.1:10474"+path)
}

// writeFiles writes files (path in the root: content) into root, the
// executable ones (under bin/) with mode 0755.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(p, "/bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}
