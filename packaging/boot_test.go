package packaging

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// bootMinutes is how long TestBootDebian watches the jobs run: 10 minutes,
// as issue 38 asks a healthy cron job to stay healthy for;
// JOBWATCH_BOOT_MINUTES shortens it while working on the test.
func bootMinutes(t *testing.T) int {
	t.Helper()
	s := os.Getenv("JOBWATCH_BOOT_MINUTES")
	if s == "" {
		return 10
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("JOBWATCH_BOOT_MINUTES=%q: want a number of minutes, at least 2", s)
	}
	return n
}

// bootJob is a job of the booted host and what jobwatch must make of it.
type bootJob struct {
	name   string
	result string // what every run counts as
	exit   int    // the last exit code jobwatch must show (failures)
}

// The host's jobs: two minutely cron jobs in /etc/cron.d and two minutely
// timers, one of each succeeding and one failing. Each run appends a line
// to /var/tmp/NAME.runs, which the test counts to know how many ran.
var bootFiles = map[string]string{
	"usr/local/bin/cron-ok":    "#!/bin/sh\necho run >>/var/tmp/cron-ok.runs\n",
	"usr/local/bin/cron-fail":  "#!/bin/sh\necho run >>/var/tmp/cron-fail.runs\nexit 3\n",
	"usr/local/bin/timer-ok":   "#!/bin/sh\necho run >>/var/tmp/timer-ok.runs\n",
	"usr/local/bin/timer-fail": "#!/bin/sh\necho run >>/var/tmp/timer-fail.runs\nexit 2\n",
	"etc/cron.d/boottest": "* * * * * root /usr/local/bin/cron-ok >/dev/null\n" +
		"* * * * * root /usr/local/bin/cron-fail >/dev/null\n",
	"etc/systemd/system/timer-ok.timer":     "[Timer]\nOnCalendar=minutely\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n",
	"etc/systemd/system/timer-ok.service":   "[Service]\nType=oneshot\nExecStart=/usr/local/bin/timer-ok\n",
	"etc/systemd/system/timer-fail.timer":   "[Timer]\nOnCalendar=minutely\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n",
	"etc/systemd/system/timer-fail.service": "[Service]\nType=oneshot\nExecStart=/usr/local/bin/timer-fail\n",
}

// TestBootDebian is the package on a booted Debian (issue 38): a bookworm
// root (debianRoot: made once with debootstrap, cached) booted with
// systemd as PID 1 by systemd-nspawn, the .deb built from this tree
// installed with apt as docs/install.md says, and the host's cron jobs
// and timers judged from /metrics and /api/v1/jobs with the package's
// default configuration: at cron's default log level (-L 1, which logs a
// run's start alone) and at -L 15 (results and exit codes), in two
// containers side by side. The -L 15 one is then upgraded (the edited
// conffile and the state kept) and purged.
func TestBootDebian(t *testing.T) {
	if testing.Short() {
		t.Skip("boots Debian for at least 10 minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: debootstrap, systemd-nspawn, nsenter")
	}
	for cmd, pkg := range map[string]string{"debootstrap": "debootstrap", "systemd-nspawn": "systemd-container",
		"nsenter": "util-linux", "unshare": "util-linux", "dpkg-deb": "dpkg"} {
		need(t, cmd, pkg)
	}
	t.Parallel()
	minutes := bootMinutes(t)
	root := debianRoot(t)
	sweepContainers(t)
	pkg, upgrade := deb(t), upgradeDeb(t)
	debs := containerDir(t, fmt.Sprintf("%sdebs-%d", containerPrefix, os.Getpid()))
	for name, p := range map[string]string{"dist": pkg, "upgrade": upgrade} {
		if err := os.MkdirAll(filepath.Join(debs, name), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, p, filepath.Join(debs, name, filepath.Base(p)))
	}
	for _, level := range []int{1, 15} {
		t.Run(fmt.Sprintf("L%d", level), func(t *testing.T) {
			t.Parallel()
			bootLevel(t, root, debs, level, minutes)
		})
	}
}

// bootLevel boots a container whose cron logs at level, installs the
// package and judges the jobs for minutes; at -L 15 it upgrades and purges.
func bootLevel(t *testing.T, root, debs string, level, minutes int) {
	c := bootContainer(t, root, fmt.Sprintf("%sl%d-%d", containerPrefix, level, os.Getpid()), debs, func(r string) {
		writeFiles(t, r, bootFiles)
		for _, timer := range []string{"timer-ok.timer", "timer-fail.timer"} {
			link := filepath.Join(r, "etc/systemd/system/timers.target.wants", timer)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/systemd/system/"+timer, link); err != nil {
				t.Fatal(err)
			}
		}
		if level == 1 {
			return // Debian's default: /etc/default/cron as shipped
		}
		// bookworm ships the line commented out: appended, as the
		// -L 1 hint says.
		f, err := os.OpenFile(filepath.Join(r, "etc/default/cron"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "EXTRA_OPTS=\"-L %d\"\n", level)
		f.Close()
	})
	// cron runs with the level meant (no -L at all is -L 1).
	cmdline := strings.ReplaceAll(c.sh("cat /proc/$(cat /run/crond.pid)/cmdline"), "\x00", " ")
	if got := strings.Contains(cmdline, "-L 15"); got != (level == 15) {
		t.Fatalf("cron runs as %q at level %d", cmdline, level)
	}
	c.sh("cd /mnt/jobwatch && apt install -y ./dist/jobwatch_*.deb")
	checkVersions(t, c)
	jobs := []bootJob{{"timer-ok", "success", 0}, {"timer-fail", "failure", 2}}
	if level == 1 {
		// A start is all cron logs: the result is unknown, and the
		// failing job is as healthy as the other.
		jobs = append(jobs, bootJob{"cron-ok", "unknown", 0}, bootJob{"cron-fail", "unknown", 0})
	} else {
		jobs = append(jobs, bootJob{"cron-ok", "success", 0}, bootJob{"cron-fail", "failure", 3})
	}
	watchJobs(t, c, jobs, minutes)
	checkHint(t, c, level)
	checkSilenceWatch(t, c)
	if level == 15 {
		checkUpgrade(t, c)
		checkPurge(t, c)
	}
}

// checkVersions: jobwatch --version and jobwatch_build_info show the
// version as dpkg shows it, Debian's spelling (~) included.
func checkVersions(t *testing.T, c *container) {
	t.Helper()
	v := strings.TrimSpace(c.sh("dpkg-query -W -f='${Version}' jobwatch"))
	out := c.sh("jobwatch --version 2>&1")
	if !regexp.MustCompile(`(?m)^jobwatch, version ` + regexp.QuoteMeta(v) + ` `).MatchString(out) {
		t.Errorf("jobwatch --version:\n%s\nwant version %s, as dpkg-query -W jobwatch shows it", out, v)
	}
	testproc.Eventually(t, 2*time.Minute, "jobwatch_build_info", func() error {
		m, err := c.get("/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(m, `version="`+v+`"`) {
			return fmt.Errorf("no jobwatch_build_info with version=%q:\n%s", v, grepLines(m, "jobwatch_build_info"))
		}
		return nil
	})
}

// samples are one scrape's samples by series (name{labels}).
type samples map[string]float64

func parseSamples(text string) samples {
	s := samples{}
	for _, l := range strings.Split(text, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			s[l[:i]] = v
		}
	}
	return s
}

// job is the value of a job's series name (with extra labels, e.g.
// `result="success"`), -1 when absent.
func (s samples) job(name, job, extra string) float64 {
	key := name + `{job_name="` + job + `"`
	if extra != "" {
		key += "," + extra
	}
	if v, ok := s[key+"}"]; ok {
		return v
	}
	return -1
}

// runsFile counts the runs a job made, from the lines its script appends.
func runsFile(c *container, job string) int {
	out, _ := c.run("sh", "-c", "cat /var/tmp/"+job+".runs 2>/dev/null | wc -l")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// watchJobs waits until every job has run minutes more times than when
// jobwatch first showed it, checking at every look that the healthy ones
// never fail, are never lost or stale and that no job misses a run; then
// every verdict is checked from /metrics and /api/v1/jobs.
func watchJobs(t *testing.T, c *container, jobs []bootJob, minutes int) {
	t.Helper()
	testproc.Eventually(t, 3*time.Minute, "jobwatch watching the host's four jobs", func() error {
		api, err := apiJobs(c)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if _, ok := api[j.name]; !ok {
				return fmt.Errorf("no job %s in /api/v1/jobs yet", j.name)
			}
		}
		return nil
	})
	start := map[string]int{}
	for _, j := range jobs {
		start[j.name] = runsFile(c, j.name)
	}
	violations := map[string]bool{}
	// Each look is a scrape; a run a minute is what is waited for, so a
	// look every 10 s sees every state a job passes through for longer.
	testproc.EventuallyEvery(t, time.Duration(minutes+3)*time.Minute, 10*time.Second,
		fmt.Sprintf("%d more runs of every job", minutes), func() error {
			m, err := c.get("/metrics")
			if err != nil {
				return err
			}
			for _, v := range healthViolations(parseSamples(m), jobs, failedBySystemd(c, jobs)) {
				if !violations[v.what] { // each said once, when first seen
					violations[v.what] = true
					t.Errorf("%s: %s", time.Now().Format(time.TimeOnly), v)
				}
			}
			for _, j := range jobs {
				if n := runsFile(c, j.name) - start[j.name]; n < minutes {
					return fmt.Errorf("%s ran %d times", j.name, n)
				}
			}
			return nil
		})
	checkVerdicts(t, c, jobs, minutes)
}

// violation is something seen that must never be: what (a job and a
// kind) and the values seen.
type violation struct{ what, seen string }

func (v violation) String() string { return v.what + ": " + v.seen }

// unitFailedMessage is the MESSAGE_ID of systemd's "Failed with result"
// entry of a unit.
const unitFailedMessage = "d9b373ed55a64feb8242e02dbe79a49c"

// failedBySystemd counts, for each timer job, the runs systemd itself
// failed: a container under load sometimes cannot put a run in its
// cgroup ("Failed at step CGROUP", status 219), and jobwatch rightly
// counts that run a failure. The journal is the oracle: a healthy job's
// failures are excused up to those.
func failedBySystemd(c *container, jobs []bootJob) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		if !strings.HasPrefix(j.name, "timer-") {
			continue
		}
		n, err := c.run("sh", "-c", "journalctl --no-pager -o cat MESSAGE_ID="+unitFailedMessage+" UNIT="+j.name+".service | wc -l")
		if err == nil {
			out[j.name], _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	return out
}

// healthViolations is what must never be seen of the jobs: a healthy one
// failing (beyond the runs systemd failed, excused), lost, stale or
// failing in a row, and any job missing a run or counted with another
// result than its own.
func healthViolations(s samples, jobs []bootJob, excused map[string]int) []violation {
	var out []violation
	for _, j := range jobs {
		for _, r := range []string{"success", "failure", "timeout", "lost", "too_short", "unknown"} {
			v := s.job("jobwatch_job_runs_total", j.name, `result="`+r+`"`)
			if r == "failure" {
				v -= float64(excused[j.name])
			}
			if r != j.result && v > 0 {
				out = append(out, violation{fmt.Sprintf("%s has runs counted %s, want only %s", j.name, r, j.result), fmt.Sprint(v)})
			}
		}
		if v := s.job("jobwatch_job_missed_runs_total", j.name, ""); v > 0 {
			out = append(out, violation{j.name + " has missed runs", fmt.Sprint(v)})
		}
		if j.result == "failure" {
			continue
		}
		if s.job("jobwatch_job_stale", j.name, "") == 1 {
			out = append(out, violation{j.name + " is stale", "jobwatch_job_stale 1"})
		}
		if v := s.job("jobwatch_job_consecutive_failures", j.name, ""); v > float64(excused[j.name]) {
			out = append(out, violation{j.name + " has consecutive failures", fmt.Sprint(v)})
		}
	}
	return out
}

// apiJob is what the test reads of a job in /api/v1/jobs.
type apiJob struct {
	Name         string            `json:"name"`
	State        string            `json:"state"`
	LastExitCode *int              `json:"last_exit_code"`
	Runs         map[string]uint64 `json:"runs_total"`
	Missed       uint64            `json:"missed_runs_total"`
}

// waitOrError is testproc.Eventually failing the test with an error
// rather than ending it, so that the steps after it still run.
func waitOrError(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("timed out after %s waiting for %s: %v", timeout, what, err)
			return
		}
		time.Sleep(time.Second) // paces the looks (a scrape in the container); the deadline bounds the wait
	}
}

// checkVerdicts checks each job's runs, result, exit code and state.
func checkVerdicts(t *testing.T, c *container, jobs []bootJob, minutes int) {
	t.Helper()
	// The last runs are read within the journal source's poll. A verdict
	// missed is an error, not the end: the upgrade and purge still run.
	waitOrError(t, 2*time.Minute, "every run counted", func() error {
		m, err := c.get("/metrics")
		if err != nil {
			return err
		}
		s := parseSamples(m)
		for _, j := range jobs {
			if n := s.job("jobwatch_job_runs_total", j.name, `result="`+j.result+`"`); n < float64(minutes) {
				return fmt.Errorf("%s: %v runs counted %s, want at least %d:\n%s", j.name, n, j.result, minutes, grepLines(m, `job_name="`+j.name+`"`))
			}
		}
		return nil
	})
	m, _ := c.get("/metrics")
	s := parseSamples(m)
	for _, v := range healthViolations(s, jobs, failedBySystemd(c, jobs)) {
		t.Errorf("at the end: %s", v)
	}
	byName, err := apiJobs(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		checkAPIJob(t, byName[j.name], j, minutes)
		if j.exit != 0 {
			if v := s.job("jobwatch_job_last_exit_code", j.name, ""); v != float64(j.exit) {
				t.Errorf("%s: jobwatch_job_last_exit_code %v, want %d", j.name, v, j.exit)
			}
		}
	}
}

// counted is how many runs and missed runs the job has counted.
func (j apiJob) counted() uint64 {
	n := j.Missed
	for _, v := range j.Runs {
		n += v
	}
	return n
}

// apiJobs are the jobs of /api/v1/jobs by name.
func apiJobs(c *container) (map[string]apiJob, error) {
	body, err := c.get("/api/v1/jobs")
	if err != nil {
		return nil, err
	}
	var rep struct{ Jobs []apiJob }
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		return nil, fmt.Errorf("/api/v1/jobs: %w", err)
	}
	out := map[string]apiJob{}
	for _, j := range rep.Jobs {
		out[j.Name] = j
	}
	return out, nil
}

func checkAPIJob(t *testing.T, got apiJob, j bootJob, minutes int) {
	t.Helper()
	if got.Runs[j.result] < uint64(minutes) || got.Missed != 0 {
		t.Errorf("%s in /api/v1/jobs: runs %v, missed %d; want at least %d %s, none missed", j.name, got.Runs, got.Missed, minutes, j.result)
	}
	healthy := got.State == "ok" || got.State == "running"
	if j.result == "failure" {
		if got.State != "failing" && got.State != "stale" {
			t.Errorf("%s in /api/v1/jobs: state %q, want failing or stale", j.name, got.State)
		}
		if got.LastExitCode == nil || *got.LastExitCode != j.exit {
			t.Errorf("%s in /api/v1/jobs: last_exit_code %v, want %d", j.name, got.LastExitCode, j.exit)
		}
	} else if !healthy {
		t.Errorf("%s in /api/v1/jobs: state %q, want ok (or running)", j.name, got.State)
	}
}

// hint is what jobwatch tells about cron jobs at -L 1 (issue 38).
const hint = `EXTRA_OPTS="-L 15"`

// checkHint: at -L 1, jobwatch status says per cron job how to have its
// results logged, and discovery reports it; at -L 15 neither does.
func checkHint(t *testing.T, c *container, level int) {
	t.Helper()
	status, err := c.run("jobwatch", "status")
	if err != nil {
		t.Errorf("jobwatch status: %v", err)
	}
	// discover exits 1 when a finding is a warning (a cron job without a
	// timeout, say): its findings are all this looks at.
	disc, _ := c.run("sh", "-c", "cd / && jobwatch discover --output - 2>&1 >/dev/null")
	for what, out := range map[string]string{"jobwatch status": status, "jobwatch discover's findings": disc} {
		if got := strings.Contains(out, hint); got != (level == 1) {
			t.Errorf("at -L %d %s says %s: %v, want %v:\n%s", level, what, hint, got, level == 1, out)
		}
	}
}

// checkSilenceWatch: under the shipped unit's sandbox, the journal source
// can ask systemctl when the timers fired (its check of a journal that
// shows nothing while they do), which it says once when it cannot.
func checkSilenceWatch(t *testing.T, c *container) {
	t.Helper()
	if log := c.sh("journalctl --no-pager -u jobwatch"); strings.Contains(log, "cannot ask systemctl") {
		t.Errorf("the journal source cannot ask systemctl under the unit:\n%s", log)
	}
}

// checkUpgrade installs a second build over the first with apt: the edited
// conffile is kept (no prompt, no copy left), and so is the state.
func checkUpgrade(t *testing.T, c *container) {
	t.Helper()
	c.sh("echo '# edited by TestBootDebian' >>/etc/jobwatch/jobwatch.yml")
	before, err := apiJobs(c)
	if err != nil {
		t.Fatal(err)
	}
	c.sh("cd /mnt/jobwatch && apt install -y ./upgrade/jobwatch_*.deb")
	want := strings.TrimSpace(c.sh("dpkg-deb -f /mnt/jobwatch/upgrade/jobwatch_*.deb Version"))
	if got := strings.TrimSpace(c.sh("dpkg-query -W -f='${Version}' jobwatch")); got != want {
		t.Errorf("after the upgrade dpkg shows %s, want %s", got, want)
	}
	if !strings.Contains(c.sh("cat /etc/jobwatch/jobwatch.yml"), "# edited by TestBootDebian") {
		t.Errorf("the upgrade lost the conffile's edit")
	}
	if left := c.sh("ls /etc/jobwatch/ | grep dpkg || true"); left != "" {
		t.Errorf("the upgrade left %s", left)
	}
	// The state kept: every job's counts go on from where they were.
	waitOrError(t, 2*time.Minute, "jobwatch after the upgrade, its state kept", func() error {
		after, err := apiJobs(c)
		if err != nil {
			return err
		}
		for _, name := range []string{"cron-ok", "cron-fail", "timer-ok", "timer-fail"} {
			j := before[name]
			if j.counted() == 0 {
				return fmt.Errorf("%s had nothing counted before the upgrade to compare", name)
			}
			if after[name].counted() < j.counted() {
				return fmt.Errorf("%s: %+v after the upgrade, %+v before", name, after[name], j)
			}
		}
		return nil
	})
	c.sh("systemctl is-active jobwatch")
}

// checkPurge purges the package: its files, state and logs go, the user
// stays (docs/install.md), no jobwatch process is left.
func checkPurge(t *testing.T, c *container) {
	t.Helper()
	c.sh("apt-get purge -y jobwatch")
	for _, p := range []string{"/usr/bin/jobwatch", "/etc/jobwatch", "/etc/default/jobwatch", "/var/lib/jobwatch", "/var/log/jobwatch", "/lib/systemd/system/jobwatch.service"} {
		if out, err := c.run("test", "!", "-e", p); err != nil {
			t.Errorf("%s left after purge (%v) %s", p, err, out)
		}
	}
	if out, err := c.run("getent", "passwd", "jobwatch"); err != nil {
		t.Errorf("purge removed the user jobwatch (%v) %s", err, out)
	}
	if out := c.sh(`for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" != jobwatch ] || echo $p; done`); out != "" {
		t.Errorf("jobwatch still runs after purge: %s", out)
	}
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// copyFile copies src to dst (0644).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
