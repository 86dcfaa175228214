package remote

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/netnstest"
	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
	"github.com/jobwatch/jobwatch/wrapper"
)

// The distributed test: three network namespaces on a bridge (the server,
// hosts a and b), both hosts looping `jobwatch run --lock F --lock-redis
// URL --lock-ttl 5s --kill-after 1s -- JOB` (or --lock-mysql), the job
// logging its critical section on the kernel's monotonic clock, and faults
// injected on host a while its job is inside. Checked from the sections'
// monotonic intervals and the run logs: no overlap for partitions, paused
// and killed wrappers; every lease that a paused wrapper or a server
// restart lost recorded as lock_lost, none that was provably held; fencing
// tokens strictly increasing but across a restart of a Redis without
// persistence.

// criticalArg as its first argument makes the test binary the job: it
// appends its critical section's events to the file its second names, as
// the host criticalHostEnv names.
const (
	criticalArg     = "critical-section"
	criticalHostEnv = "JOBWATCH_TEST_CRITICAL_HOST"
)

// criticalJob is how long a job stays in its critical section, and
// criticalTick how often it logs that it is still in it (every action of
// the section is logged: an interval ends at its last tick).
const (
	criticalJob  = 6 * time.Second
	criticalTick = 10 * time.Millisecond
)

// faultFor is how long a partition, a link down or a pause lasts: longer
// than the lease (5 s).
const faultFor = 7 * time.Second

// criticalSection is the job: "HOST PPID EVENT MONO TOKEN" lines, EVENT
// start, tick, end (done) or term (SIGTERM). PPID is its reaper, the pid
// of the run's records.
func criticalSection(path string) int {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return 2
	}
	host, tok, ppid := os.Getenv(criticalHostEnv), os.Getenv(wrapper.FencingTokenEnv), os.Getppid()
	write := func(ev string) { fmt.Fprintf(f, "%s %d %s %d %s\n", host, ppid, ev, monoNow(), tok) }
	term := make(chan os.Signal, 1)
	signal.Notify(term, unix.SIGTERM)
	write("start")
	tick := time.NewTicker(criticalTick)
	end := time.NewTimer(criticalJob) // the section's length
	for {
		select {
		case <-tick.C:
			write("tick")
		case <-end.C:
			write("end")
			return 0
		case <-term:
			write("term")
			return 143
		}
	}
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// hostLoop runs one host's wrappers one after another until stopped.
type hostLoop struct {
	t    *testing.T
	name string
	h    *netnstest.Host
	args []string // the wrapper's flags, up to --
	log  string   // its run log

	mu   sync.Mutex
	cur  *os.Process
	stop bool
	done chan struct{}
}

func startLoop(t *testing.T, name string, h *netnstest.Host, dir, critical string, lockArgs []string) *hostLoop {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &hostLoop{t: t, name: name, h: h, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	l.args = append([]string{"--job", "j", "--log", l.log, "--lock", filepath.Join(dir, name+".lock"),
		"--kill-after", "1s", "--skip-exit-code", "75"}, lockArgs...)
	l.args = append(l.args, "--", exe, criticalArg, critical)
	env := append(os.Environ(), testEnv+"=1", testHostEnv+"="+name, criticalHostEnv+"="+name)
	go func() {
		defer close(l.done)
		for {
			cmd := h.Command(exe, l.args...)
			cmd.Env = env
			l.mu.Lock()
			if l.stop {
				l.mu.Unlock()
				return
			}
			err := cmd.Start()
			if err == nil {
				l.cur = cmd.Process
			}
			l.mu.Unlock()
			if err != nil {
				t.Errorf("host %s: %v", name, err)
				return
			}
			_ = cmd.Wait()
			time.Sleep(20 * time.Millisecond) // paces the retries of a host whose runs are skipped
		}
	}()
	t.Cleanup(l.halt)
	return l
}

// signal sends sig to the host's current wrapper.
func (l *hostLoop) signal(sig syscall.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		_ = l.cur.Signal(sig)
	}
}

// halt stops the loop after its current run (continued, should a failed
// test have left it stopped).
func (l *hostLoop) halt() {
	l.mu.Lock()
	l.stop = true
	if l.cur != nil {
		_ = l.cur.Signal(syscall.SIGCONT)
	}
	l.mu.Unlock()
	<-l.done
}

// section is one run's critical section, from the job's log.
type section struct {
	host       string
	pid        int // the run's (its reaper's)
	start, end int64
	token      int64
	ended      string // end, term, or tick (killed)
}

func readSections(t *testing.T, path string) []*section {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	byRun := map[string]*section{}
	var out []*section
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			continue // a line cut by a SIGKILL
		}
		pid, _ := strconv.Atoi(fs[1])
		mono, _ := strconv.ParseInt(fs[3], 10, 64)
		key := fs[0] + " " + fs[1]
		s := byRun[key]
		if fs[2] == "start" || s == nil {
			s = &section{host: fs[0], pid: pid, start: mono}
			if len(fs) > 4 {
				s.token, _ = strconv.ParseInt(fs[4], 10, 64)
			}
			byRun[key] = s
			out = append(out, s)
		}
		s.end, s.ended = mono, fs[2]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// trial is one fault injected on host a.
type trial struct {
	fault    string
	at, upTo int64 // monotonic: injected, healed
	run      int   // host a's run (the pid of its records) inside at the fault
}

// lockRig is the server under test: how hosts name it, and its restart.
type lockRig struct {
	lockArgs []string
	restart  func()
	// persistent: the fencing counter survives a restart.
	persistent bool
	// pauseLoses: a wrapper paused past the lease loses its lock (a lease
	// that expires; a MySQL lock lives as long as its connection).
	pauseLoses bool
}

func TestPartitions(t *testing.T) {
	netnstest.Require(t)
	trials := 2
	if n, err := strconv.Atoi(os.Getenv("JOBWATCH_TEST_PARTITION_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		n := netnstest.New(t)
		srvHost, a, b := n.Host(1), n.Host(2), n.Host(3)
		srv := redistest.StartOn(t, srvHost)
		runPartitions(t, a, b, trials, lockRig{
			lockArgs: []string{"--lock-redis", srv.URL(), "--lock-ttl", "5s"},
			restart:  func() { srv.Stop(); srv.Restart() }, pauseLoses: true})
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		n := netnstest.New(t)
		srvHost, a, b := n.Host(1), n.Host(2), n.Host(3)
		srv := mariadbtest.StartOn(t, srvHost)
		db := srv.NewDatabase(t)
		dsn := "root@tcp(" + srv.Addr() + ")/" + db
		runPartitions(t, a, b, trials, lockRig{
			lockArgs: []string{"--lock-mysql", dsn},
			restart:  func() { srv.Kill(); srv.Start() }, persistent: true})
	})
}

// runPartitions runs the trials of every fault and checks the outcome.
func runPartitions(t *testing.T, a, b *netnstest.Host, trials int, rig lockRig) {
	dir := t.TempDir()
	critical := filepath.Join(dir, "critical")
	la := startLoop(t, "a", a, dir, critical, rig.lockArgs)
	lb := startLoop(t, "b", b, dir, critical, rig.lockArgs)
	faults := []struct {
		name        string
		inject, end func()
	}{
		{"cut", func() { must(t, a.Cut()) }, func() { must(t, a.Heal()) }},
		{"down", func() { must(t, a.Down()) }, func() { must(t, a.Up()) }},
		{"pause", func() { la.signal(unix.SIGSTOP) }, func() { la.signal(unix.SIGCONT) }},
		{"kill", func() { la.signal(unix.SIGKILL) }, nil},
		{"restart", rig.restart, nil},
	}
	var done []trial
	var after int64
	for i := range trials {
		for _, f := range faults {
			tr := trial{fault: f.name}
			tr.run = waitInside(t, critical, "a", after, fmt.Sprintf("%s trial %d", f.name, i+1))
			tr.at = monoNow()
			f.inject()
			if f.end != nil {
				time.Sleep(faultFor) // the fault's length
				f.end()
			}
			tr.upTo = monoNow()
			after = tr.upTo
			done = append(done, tr)
		}
	}
	// The last runs finish (a wrapper resumed after its pause records
	// what it found) before the logs are read.
	la.halt()
	lb.halt()
	checkPartitions(t, readSections(t, critical), readRecords(t, la.log), done, rig)
}

func must(t *testing.T, err error) {
	if err != nil {
		t.Error(err)
	}
}

// waitInside waits until a job of host started after after is inside its
// critical section for at least 300 ms (a renewal may be under way right
// after the start) and returns its run's pid.
func waitInside(t *testing.T, critical, host string, after int64, what string) int {
	var pid int
	waitFor(t, "host "+host+" inside its critical section for "+what, 120*time.Second, func() bool {
		secs := readSections(t, critical)
		now := monoNow()
		for i := len(secs) - 1; i >= 0; i-- {
			s := secs[i]
			if s.host == host && s.start > after && s.ended == "tick" && now-s.start > int64(300*time.Millisecond) && now-s.end < int64(200*time.Millisecond) &&
				now-s.start < int64(criticalJob/2) {
				pid = s.pid
				return true
			}
		}
		return false
	})
	return pid
}

// checkPartitions checks every trial: overlaps, lock_lost records, tokens.
func checkPartitions(t *testing.T, secs []*section, aRecs []record, trials []trial, rig lockRig) {
	lost := map[int]string{}
	for _, r := range aRecs {
		if r.Event == "lock_lost" {
			lost[r.PID] = r.Reason
		}
	}
	allowOverlap := map[int]bool{}
	for _, tr := range trials {
		wantLost := tr.fault == "cut" || tr.fault == "down" || tr.fault == "restart" || tr.fault == "pause" && rig.pauseLoses
		reason, got := lost[tr.run]
		switch {
		case tr.fault == "kill":
		case wantLost && !got:
			t.Errorf("%s: host a's run %d recorded no lock_lost", tr.fault, tr.run)
		case !wantLost && got:
			t.Errorf("%s: host a's run %d recorded lock_lost (%s) for a lock provably held", tr.fault, tr.run, reason)
		}
		if tr.fault == "restart" {
			allowOverlap[tr.run] = true
		}
	}
	overlaps := 0
	for i, s := range secs {
		for _, o := range secs[i+1:] {
			if o.host == s.host || o.start > s.end || s.start > o.end {
				continue
			}
			overlaps++
			if !allowOverlap[s.pid] && !allowOverlap[o.pid] {
				t.Errorf("critical sections overlap: %s run %d [%d, %d] and %s run %d [%d, %d]: %.3f s",
					s.host, s.pid, s.start, s.end, o.host, o.pid, o.start, o.end, float64(min(s.end, o.end)-max(s.start, o.start))/1e9)
			}
		}
	}
	checkStopped(t, secs, trials, rig)
	checkTokens(t, secs, trials, rig)
	reportMargins(t, secs, trials, overlaps)
}

// checkStopped: a holder that cannot renew or check its lock stops its
// job (SIGTERM: the section ends "term") within the lease (5 s, as the
// MySQL checks' 4.5 s); one whose lock is provably held (a paused MySQL
// wrapper) lets it finish.
func checkStopped(t *testing.T, secs []*section, trials []trial, rig lockRig) {
	for _, tr := range trials {
		stop := tr.fault == "cut" || tr.fault == "down" || tr.fault == "pause" && rig.pauseLoses
		if !stop && tr.fault != "pause" {
			continue
		}
		for _, s := range secs {
			if s.host != "a" || s.pid != tr.run {
				continue
			}
			took := time.Duration(s.end - tr.at)
			switch {
			case stop && (s.ended != "term" || took > 5*time.Second):
				t.Errorf("%s: host a's job ended (%s) %s after the fault, want stopped (term) within the lease", tr.fault, s.ended, took)
			case !stop && s.ended != "end":
				t.Errorf("%s: host a's job ended (%s), want it to finish: its lock was held", tr.fault, s.ended)
			}
		}
	}
}

// checkTokens: fencing tokens grow strictly in the order the sections
// started, but across a restart of a server that keeps no data.
func checkTokens(t *testing.T, secs []*section, trials []trial, rig lockRig) {
	var prev *section
	for _, s := range secs {
		if s.token <= 0 {
			t.Errorf("%s run %d: no fencing token", s.host, s.pid)
			continue
		}
		restarted := false
		for _, tr := range trials {
			if tr.fault == "restart" && prev != nil && prev.start < tr.upTo && s.start > tr.at {
				restarted = true
			}
		}
		if prev != nil && s.token <= prev.token && (rig.persistent || !restarted) {
			t.Errorf("fencing token %d of %s run %d after %d of %s run %d", s.token, s.host, s.pid, prev.token, prev.host, prev.pid)
		}
		prev = s
	}
}

// reportMargins logs, for each trial, from the end of host a's section to
// the start of b's next one: what the margin left.
func reportMargins(t *testing.T, secs []*section, trials []trial, overlaps int) {
	for _, tr := range trials {
		var a, next *section
		for _, s := range secs {
			if s.host == "a" && s.pid == tr.run {
				a = s
			}
			if a != nil && s.host == "b" && s.start > a.start && s.start > tr.at && next == nil {
				next = s
			}
		}
		if a == nil || next == nil {
			continue
		}
		t.Logf("%s: a's section ended (%s) %.3f s after the fault; b's started %.3f s after that",
			tr.fault, a.ended, float64(a.end-tr.at)/1e9, float64(next.start-a.end)/1e9)
	}
	t.Logf("%d trials, %d sections, %d overlaps (allowed only across a server restart)", len(trials), len(secs), overlaps)
}
