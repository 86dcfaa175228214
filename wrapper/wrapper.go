// Package wrapper implements `jobwatch run`: it runs one scheduled command
// under a non-blocking lock and a hard timeout, and appends a start, end or
// skip record for every run to the run log that jobwatch's runlog source reads.
package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/jobname"
	"github.com/jobwatch/jobwatch/internal/redact"
	"github.com/jobwatch/jobwatch/internal/runcmd"
)

// Defaults of the flags.
const (
	DefaultLog       = runcmd.DefaultLog
	DefaultKillAfter = 10 * time.Second
	// DefaultRecordTable is --record-table's default, the table the mysql
	// source reads by default.
	DefaultRecordTable = "job_runs"
	// DefaultLockCheckInterval is how long a MySQL lock may go unconfirmed
	// while the job runs: its connection is checked twice in that time, and
	// the lock is lost when no check has answered for that long.
	DefaultLockCheckInterval = 5 * time.Second
)

// Exit codes of the wrapper itself; otherwise it exits with the command's own
// code, or 128+N when the command died of signal N.
const (
	ExitTimeout       = 124 // the command ran past --timeout and was killed
	ExitWrapper       = 125 // usage error, lock error, or run log unwritable while the job succeeded
	ExitNotExecutable = 126 // the command exists but cannot be executed
	ExitNotFound      = 127 // the command does not exist
)

// afterLockHook, when set (by tests only), runs once the local lock is taken
// and before the job starts: a wrapper slowed down there is what a loaded
// machine looks like to a run that skips.
var afterLockHook func()

// Options of one run.
type Options struct {
	Job  string
	Log  string // run log; DefaultLog when empty
	Lock string // lock file; no lock when empty
	// Timeout: when > 0, the job's process group gets SIGTERM after it and
	// SIGKILL KillAfter later.
	Timeout   time.Duration
	KillAfter time.Duration
	// SkipExitCode is the exit code when the lock is held.
	SkipExitCode int
	Command      []string

	// The shared lock, taken after Lock (the local one) and released before
	// it: at most one of LockRedis (a URL) and LockMySQL (a go-sql-driver
	// DSN with ${VAR} expanded, or LockMySQLDSNFile).
	LockRedis, LockRedisPasswordFile string
	LockMySQL, LockMySQLDSNFile      string
	// LockName is the Redis key or GET_LOCK name; "jobwatch:JOB" or
	// "jobwatch.JOB" when empty.
	LockName string
	// LockTTL is the Redis lease, renewed every third of it; 2 x Timeout
	// when 0 and a Timeout is set.
	LockTTL time.Duration
	// LockUnavailable (skip, run, fail; skip when empty) is what to do when
	// the shared lock's server cannot be reached; OnLockLost (kill, warn;
	// kill when empty) when the lock is lost while the job runs.
	LockUnavailable, OnLockLost string
	// LockCheckInterval is how long a MySQL lock may go unconfirmed (its
	// connection is checked twice in that time); DefaultLockCheckInterval
	// when 0.
	LockCheckInterval time.Duration

	// RecordMySQL (a DSN, ${VAR} expanded) or RecordMySQLDSNFile: the run
	// is also written into RecordTable (DefaultRecordTable when empty).
	RecordMySQL, RecordMySQLDSNFile, RecordTable string

	// A run that declined to run (declined.go): the command exiting with
	// one of SkippedExit, or a line of its output matching the regular
	// expression SkippedOutput, is recorded as skipped, with SkippedReason
	// (one of model.SkipReasons; SkipOther when empty), and the wrapper
	// exits with SkipExitCode.
	SkippedExit                  []int
	SkippedOutput, SkippedReason string

	// Remote sets up the table and the shared lock (package wrapper/remote);
	// nil refuses their options.
	Remote Remote

	// Host is the host name recorded; the machine's hostname when empty.
	Host string
	// Stdout and Stderr are the job's; the wrapper's own messages go to
	// Stderr. os.Stdout and os.Stderr when nil.
	Stdout, Stderr io.Writer
	Now            func() time.Time
	Getenv         func(string) (string, bool) // os.LookupEnv when nil
}

// Run runs the command as o describes and returns the exit code for the
// wrapper. It never panics on bad options: they are one line on Stderr and
// ExitWrapper.
func Run(o Options) int {
	r, code := newRunner(o)
	if r == nil {
		return code
	}
	return r.run()
}

// newRunner fills o's defaults. Without a valid job name nothing can be
// recorded: it says why on Stderr and returns a nil runner and ExitWrapper.
func newRunner(o Options) (*runner, int) {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	if o.Log == "" {
		o.Log = DefaultLog
	}
	if o.RecordTable == "" {
		o.RecordTable = DefaultRecordTable
	}
	if o.LockCheckInterval <= 0 {
		o.LockCheckInterval = DefaultLockCheckInterval
	}
	if o.Job == "" {
		fmt.Fprintln(o.Stderr, "jobwatch run: --job is required")
		return nil, ExitWrapper
	}
	if !jobname.Valid(o.Job) {
		fmt.Fprintf(o.Stderr, "jobwatch run: invalid job name %q: must match %s\n", o.Job, jobname.Pattern)
		return nil, ExitWrapper
	}
	host := o.Host
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil {
			host = "unknown"
		}
	}
	return &runner{o: o, log: &runLog{path: o.Log}, host: host, runID: newRunID(), begin: o.Now(), red: &redact.Redactor{}}, 0
}

type runner struct {
	o     Options
	log   *runLog
	table Table // --record-mysql, or nil
	host  string
	runID string
	begin time.Time
	red   *redact.Redactor
	// endReason is the end record's reason: lock_lost, or lock_unavailable
	// for a run that went ahead without its shared lock.
	endReason string
	// output watches the command's output for --skipped-output; nil
	// without it, and the command then inherits the wrapper's stdout and
	// stderr.
	output *outputWatch
	// released: the shared lock has been released (settleShared).
	released bool
}

// acquireTimeout bounds taking the shared lock, connecting included.
const acquireTimeout = 10 * time.Second

// openTable sets up --record-mysql; nothing is dialled yet.
func (r *runner) openTable() error {
	o := r.o
	if o.RecordMySQL == "" && o.RecordMySQLDSNFile == "" {
		if o.Log == NoLog {
			return errors.New("--log - (no run log) needs --record-mysql")
		}
		return nil
	}
	if o.Remote == nil {
		return errNoRemote
	}
	var err error
	r.table, err = o.Remote.Table(o, r.red)
	return err
}

// errNoRemote: a caller of Run without Options.Remote gave a table or
// shared lock option.
var errNoRemote = errors.New("--record-mysql, --lock-redis and --lock-mysql are not available here")

// sharedLock sets up the second layer from the options; nil without one.
func (r *runner) sharedLock() (SharedLock, error) {
	o := r.o
	redis := o.LockRedis != ""
	mysql := o.LockMySQL != "" || o.LockMySQLDSNFile != ""
	switch {
	case redis && mysql:
		return nil, errors.New("--lock-redis and --lock-mysql: give one of them")
	case !redis && o.LockRedisPasswordFile != "":
		return nil, errors.New("--lock-redis-password-file needs --lock-redis")
	case !redis && o.LockTTL != 0:
		return nil, errors.New("--lock-ttl applies to --lock-redis only")
	case !redis && !mysql:
		if o.LockName != "" {
			return nil, errors.New("--lock-name needs --lock-redis or --lock-mysql")
		}
		return nil, nil
	}
	switch o.LockUnavailable {
	case "", UnavailableSkip, UnavailableRun, UnavailableFail:
	default:
		return nil, fmt.Errorf("--lock-unavailable must be skip, run or fail, got %q", o.LockUnavailable)
	}
	switch o.OnLockLost {
	case "", LostKill, LostWarn:
	default:
		return nil, fmt.Errorf("--on-lock-lost must be kill or warn, got %q", o.OnLockLost)
	}
	if o.Remote == nil {
		return nil, errNoRemote
	}
	token := r.host + ":" + strconv.Itoa(os.Getpid()) + ":" + r.runID
	return o.Remote.SharedLock(o, token, r.red)
}

// takeShared takes the shared lock, if any. It returns the lock held (nil
// when the run goes ahead without one), or done and the wrapper's exit code
// when the run ends here (skipped or failed).
func (r *runner) takeShared(shared SharedLock) (held SharedLock, code int, done bool) {
	if shared == nil {
		return nil, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	ok, holder, err := shared.Acquire(ctx)
	cancel()
	switch {
	case err != nil && isConfigError(err):
		return nil, r.fail(ExitWrapper, err), true
	case err != nil:
		switch r.o.LockUnavailable {
		case UnavailableFail:
			return nil, r.fail(ExitWrapper, fmt.Errorf("%w (--lock-unavailable=fail)", err)), true
		case UnavailableRun:
			r.say("%v; running without the %s lock (--lock-unavailable=run)", err, shared.Layer())
			r.endReason = reasonUnavailable
			return nil, 0, false
		}
		r.say("%v; run skipped (--lock-unavailable=skip)", err)
		return nil, r.skip(shared.Layer(), reasonUnavailable, 0, ""), true
	case !ok:
		return nil, r.skip(shared.Layer(), reasonLocked, 0, holder), true
	}
	return shared, 0, false
}

// say writes one line of the wrapper's own on stderr, without secrets.
func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.o.Stderr, "jobwatch run: job %s: %s\n", r.o.Job, r.red.String(fmt.Sprintf(format, args...)))
}

func (r *runner) run() int {
	if err := r.checkOptions(); err != nil {
		return r.fail(ExitWrapper, err)
	}
	if err := r.openTable(); err != nil {
		return r.fail(ExitWrapper, err)
	}
	if r.table != nil {
		defer r.table.Close()
	}
	shared, err := r.sharedLock()
	if err != nil {
		return r.fail(ExitWrapper, err)
	}
	if shared != nil {
		defer shared.Close()
	}

	// Layer 1, the local lock: refused at once, without a network round
	// trip, and still protecting the host when the shared lock's server is
	// down.
	var lock *os.File
	if r.o.Lock != "" {
		if lock, err = openLock(r.o.Lock); err != nil {
			return r.fail(ExitWrapper, err)
		}
		// The job inherits the lock as fd 3; the wrapper keeps its fd too,
		// until it has written the end record, so a next run's start never
		// precedes this run's end in the log. The lock lasts until every
		// holder has closed it: a killed wrapper leaves it with the job.
		defer lock.Close()
		if code, done := r.takeLocal(lock); done {
			return code
		}
	}
	// Layer 2, the shared lock: excludes the other hosts. Released before
	// the local one (deferred calls run in reverse), so a next run on this
	// host is never refused by a shared lock this run still holds.
	shared, code, done := r.takeShared(shared)
	if done {
		return code
	}
	if shared != nil {
		defer r.releaseShared(shared)
	}
	return r.execute(lock, shared)
}

// execute starts the command under the locks taken, waits for it (its
// timeout, signals forwarded, the shared lock watched) and records its end.
func (r *runner) execute(lock *os.File, shared SharedLock) int {
	path, code, err := lookCommand(r.o.Command[0])
	if err != nil {
		return r.fail(code, err)
	}
	sigs := forwardSignals()
	defer signal.Stop(sigs)
	cmd, rc, err := r.start(path, lock, shared)
	if err != nil {
		return r.fail(startErrorCode(err), fmt.Errorf("%s: %w", r.o.Command[0], unwrapStart(err)))
	}
	pid := cmd.Process.Pid
	exited := notifyExited(pid)
	lostC, stopWatch := r.watchShared(shared, rc)
	timedOut, lockLost := r.wait(pid, exited, sigs, lostC, shared)
	code = r.waitCode(cmd)
	stopWatch()
	if shared != nil && r.settleShared(pid, shared, rc) && !timedOut && r.o.OnLockLost != LostWarn {
		lockLost = true
	}
	return r.end(pid, code, timedOut, lockLost)
}

// checkOptions rejects the options no run can start with.
func (r *runner) checkOptions() error {
	o := r.o
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return errors.New("no command given after --")
	case o.Timeout < 0:
		return fmt.Errorf("--timeout must not be negative, got %s", o.Timeout)
	case o.KillAfter < 0:
		return fmt.Errorf("--kill-after must not be negative, got %s", o.KillAfter)
	case o.SkipExitCode < 0 || o.SkipExitCode > 255:
		return fmt.Errorf("--skip-exit-code must be 0-255, got %d", o.SkipExitCode)
	}
	return r.checkSkipped()
}

// takeLocal takes the local lock on the open lock file. It returns done and
// the wrapper's exit code when the run ends here (skipped or failed).
func (r *runner) takeLocal(lock *os.File) (code int, done bool) {
	err := retryEINTR(func() error { return unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return r.skip(layerFile, reasonLocked, lockHolder(lock), ""), true
	}
	if err != nil {
		return r.fail(ExitWrapper, fmt.Errorf("locking %s: %w", r.o.Lock, err)), true
	}
	if afterLockHook != nil {
		afterLockHook()
	}
	return 0, false
}

// releaseShared releases the shared lock held, unless settleShared has;
// a lock already lost has been reported.
func (r *runner) releaseShared(shared SharedLock) {
	if r.released {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	defer cancel()
	if _, _, err := shared.Release(ctx, time.Now()); err != nil && r.endReason != reasonLockLost {
		r.say("releasing the %s lock: %v", shared.Layer(), err)
	}
}

// settleShared releases the shared lock once the job has ended, and tells
// the truth about it: a lock that the job outlived (the lease expired or
// was taken while the wrapper was paused or slow, or the reaper had to stop
// the job at the lease's deadline) is recorded as lost, unless that is
// recorded already; one provably held until the job ended never is. It
// reports whether the lock was lost at this point.
func (r *runner) settleShared(pid int, shared SharedLock, rc *reaperConn) bool {
	ended, stopped := rc.end()
	r.released = true
	ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
	defer cancel()
	l, lost, err := shared.Release(ctx, ended)
	if err != nil && r.endReason != reasonLockLost {
		r.say("releasing the %s lock: %v", shared.Layer(), err)
	}
	if r.endReason == reasonLockLost {
		return false // recorded while the job ran
	}
	if stopped && !lost {
		l, lost = LockLoss{Reason: LostUnreachable}, true
	}
	if !lost {
		return false
	}
	r.recordLockLost(pid, shared, l)
	if stopped {
		r.say("%s lock not renewed in time (%s): the job was stopped at the lease's deadline", shared.Layer(), l.Reason)
	} else {
		r.say("%s lock lost (%s) before the job ended", shared.Layer(), l.Reason)
	}
	return true
}

// lookCommand finds the command's executable, or returns the wrapper's exit
// code for a command that cannot run.
func lookCommand(name string) (path string, code int, err error) {
	path, err = exec.LookPath(name)
	if errors.Is(err, exec.ErrDot) {
		err = nil // found through "." in PATH: run it, as a shell would
	}
	if err != nil {
		code := ExitNotFound
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			code = ExitNotExecutable
		}
		return "", code, fmt.Errorf("%s: %w", name, unwrapExec(err))
	}
	return path, 0, nil
}

// forwardSignals catches the signals for the job, from now on: they are
// forwarded to its process group once it exists. Signals the wrapper was
// started ignoring (nohup) stay ignored.
func forwardSignals() chan os.Signal {
	sigs := make(chan os.Signal, 8)
	for _, s := range []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	return sigs
}

// start starts the job and writes its start record. With a shared lock the
// job is started through its reaper (reaper.go): cmd is then the reaper's
// process, leading the job's group, and rc its connection.
func (r *runner) start(path string, lock *os.File, shared SharedLock) (cmd *exec.Cmd, rc *reaperConn, err error) {
	o := r.o
	stdout, stderr := o.Stdout, o.Stderr
	if r.output != nil {
		stdout, stderr = r.output.writers(stdout, stderr)
	}
	cmd = &exec.Cmd{
		Path:        path,
		Args:        o.Command, // executed directly, never through a shell
		Stdin:       os.Stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, // its own process group: timeouts and signals reach its children
		WaitDelay:   time.Second,                         // if Stdout is not a file and a leftover child keeps the pipe
	}
	if rc, err = r.startJob(cmd, lock, shared); err != nil {
		return nil, nil, err
	}
	// The pid is known only now, so the command may already be running when
	// the start record is written.
	pid := cmd.Process.Pid
	r.begin = o.Now()
	start := startRecord{Time: formatTime(r.begin), Job: o.Job, Event: "start", Host: r.host, PID: pid, RunID: r.runID}
	if lock != nil {
		start.Lock = "file"
	}
	if shared != nil {
		// The lease, for jobwatch advise to weigh against the durations;
		// none when the run went ahead without its lock.
		start.LockTTL = shared.LeaseTTL().Seconds()
	}
	r.record(start)
	if r.table != nil {
		r.tableErr(r.table.Start(o.Job, r.host, pid, r.begin))
	}
	return cmd, rc, nil
}

// startJob starts cmd, with lock as its fd 3 when there is one: directly,
// or with a shared lock through its reaper, with the lock's fencing token
// in its environment.
func (r *runner) startJob(cmd *exec.Cmd, lock *os.File, shared SharedLock) (*reaperConn, error) {
	if shared == nil {
		if lock != nil {
			cmd.ExtraFiles = []*os.File{lock} // fd 3, without close-on-exec
		}
		return nil, cmd.Start()
	}
	if tok, err := shared.FencingToken(); tok != "" {
		cmd.Env = append(os.Environ(), FencingTokenEnv+"="+tok)
	} else if err != nil {
		r.say("no %s for the job: %v", FencingTokenEnv, err)
	}
	held := shared.Held()
	var stopAt time.Time // none: --on-lock-lost=warn lets the job run on
	if r.o.OnLockLost != LostWarn {
		stopAt = shared.StopAt()
	}
	rc, err := startReaper(cmd, lock, held, r.o.KillAfter, stopAt)
	for _, f := range held {
		keepNonblocking(f)
		f.Close()
	}
	return rc, err
}

// notifyExited returns a channel closed once process pid has exited; the
// process is not reaped.
func notifyExited(pid int) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()
	return exited
}

// watchShared keeps the shared lock (renewed, checked) while the job runs;
// lostC says when it is lost, and stop ends the watch. Each renewal's stop
// deadline goes to the job's reaper, which stops the job by it should this
// wrapper be too late to (unless --on-lock-lost=warn). Without a shared
// lock, lostC is nil and stop does nothing.
func (r *runner) watchShared(shared SharedLock, rc *reaperConn) (lostC chan LockLoss, stop func()) {
	if shared == nil {
		return nil, func() {}
	}
	renewed := rc.setDeadline
	if r.o.OnLockLost == LostWarn {
		renewed = func(time.Time) {}
	}
	lostC = make(chan LockLoss, 1)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if l, lost := shared.Watch(ctx, renewed); lost {
			lostC <- l
		}
	}()
	return lostC, func() { cancel(); <-watched }
}

// wait forwards signals to the job's process group until the job has
// exited, stopping the job when it runs past its timeout or loses its shared
// lock. It returns why the job was stopped, if it was.
func (r *runner) wait(pid int, exited <-chan struct{}, sigs <-chan os.Signal, lostC <-chan LockLoss, shared SharedLock) (timedOut, lockLost bool) {
	o := r.o
	var timeoutC, killC <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var killDeadline time.Time
	terminate := func() {
		signalGroup(pid, unix.SIGTERM)
		signalGroup(pid, unix.SIGCONT) // a stopped process must see the SIGTERM
		killDeadline = time.Now().Add(o.KillAfter)
		t := time.NewTimer(o.KillAfter)
		killC = t.C
	}
wait:
	for {
		select {
		case <-exited:
			break wait
		case s := <-sigs:
			signalGroup(pid, s.(syscall.Signal))
		case <-timeoutC:
			if lockLost {
				continue // already being killed
			}
			timedOut = true
			fmt.Fprintf(o.Stderr, "jobwatch run: job %s: timed out after %s, sending SIGTERM to process group %d\n", o.Job, o.Timeout, pid)
			terminate()
		case l := <-lostC:
			lostC = nil
			if st, ok := readStat(pid); !ok || !st.live() {
				// The job has ended already (this wrapper was paused or
				// slow): whether it ended within the lock is for
				// settleShared to tell, from when it ended.
				<-exited
				break wait
			}
			if r.lockLost(pid, shared, l, timedOut) {
				lockLost = true
				terminate()
			}
		case <-killC:
			signalGroup(pid, unix.SIGKILL)
		}
	}
	if timedOut || lockLost {
		// The leader is a zombie until reaped below, so pgid cannot be reused.
		reapGroup(pid, 0, killDeadline)
	}
	return timedOut, lockLost
}

// lockLost records that the job's shared lock was lost and says whether the
// job must be stopped for it.
func (r *runner) lockLost(pid int, shared SharedLock, l LockLoss, timedOut bool) (stop bool) {
	o := r.o
	r.recordLockLost(pid, shared, l)
	switch {
	case timedOut:
		r.say("%s lock lost (%s) while the job is being stopped for its timeout", shared.Layer(), l.Reason)
		return false
	case o.OnLockLost == LostWarn:
		r.say("%s lock lost (%s); the job goes on (--on-lock-lost=warn)", shared.Layer(), l.Reason)
		return false
	}
	r.say("%s lock lost (%s), sending SIGTERM to process group %d", shared.Layer(), l.Reason, pid)
	return true
}

// recordLockLost writes the run's lock_lost record.
func (r *runner) recordLockLost(pid int, shared SharedLock, l LockLoss) {
	r.endReason = reasonLockLost
	r.record(lockLostRecord{Time: formatTime(r.o.Now()), Job: r.o.Job, Event: "lock_lost", Host: r.host, PID: pid, RunID: r.runID,
		Lock: shared.Layer(), Reason: l.Reason, Holder: cleanHolder(r.red.String(l.Holder))})
}

// waitCode reaps the job's process and returns its exit code, 128+N if it
// died of signal N.
func (r *runner) waitCode(cmd *exec.Cmd) int {
	_ = cmd.Wait() // an *exec.ExitError, or an I/O copying error: the status is in ProcessState
	if cmd.ProcessState == nil {
		return ExitWrapper
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return cmd.ProcessState.ExitCode()
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// end writes the end record of a run that started, and returns the wrapper's
// exit code.
func (r *runner) end(pid, code int, timedOut, lockLost bool) int {
	now := r.o.Now()
	status, reason, exit := statusSuccess, r.endReason, code
	switch {
	case timedOut:
		status, code, exit = statusTimeout, ExitTimeout, ExitTimeout
	case lockLost:
		status, code, exit = statusFailure, ExitWrapper, ExitWrapper
	case r.declined(code):
		// The record keeps the command's own code: why it was a skip.
		status, reason, exit = StatusSkipped, r.skippedReason(), r.o.SkipExitCode
	case code != 0:
		status = statusFailure
	}
	r.record(endRecord{Time: formatTime(now), Job: r.o.Job, Event: "end", Host: r.host, PID: pid, RunID: r.runID,
		Status: status, ExitCode: code, Duration: seconds(now.Sub(r.begin)), Reason: reason})
	if r.table != nil {
		r.tableErr(r.table.End(r.o.Job, r.host, pid, r.begin, now, status, code))
	}
	return r.exit(exit)
}

// fail reports why the job could not run and records it as a failed run, so
// that the failure shows in metrics. No job process exists: the record's pid
// is the wrapper's.
func (r *runner) fail(code int, err error) int {
	r.say("%v", err)
	pid := os.Getpid()
	now := r.o.Now()
	r.record(endRecord{Time: formatTime(now), Job: r.o.Job, Event: "end", Host: r.host, PID: pid, RunID: r.runID,
		Status: statusFailure, ExitCode: code, Duration: seconds(now.Sub(r.begin))})
	if r.table != nil {
		r.tableErr(r.table.Finished("end", r.o.Job, r.host, pid, now, statusFailure, code))
	}
	return r.exit(code)
}

// skip records that a lock layer refused the run: reason locked (holder:
// who has it, when known) or lock_unavailable.
func (r *runner) skip(layer, reason string, holderPID int, holder string) int {
	if holderPID > 0 {
		holder = strconv.Itoa(holderPID)
	}
	now := r.o.Now()
	r.record(skipRecord{Time: formatTime(now), Job: r.o.Job, Event: "skip", Host: r.host, PID: os.Getpid(),
		Reason: reason, Lock: layer, HolderPID: holderPID, Holder: cleanHolder(r.red.String(holder))})
	if r.table != nil {
		r.tableErr(r.table.Finished("skip", r.o.Job, r.host, os.Getpid(), now, StatusSkipped, r.o.SkipExitCode))
	}
	return r.exit(r.o.SkipExitCode)
}

func (r *runner) record(rec any) {
	if err := r.log.write(rec); err != nil {
		r.say("%v", err)
	}
}

// tableErr reports a record the table missed. The run log still has it;
// without a run log (--log -) the record is lost, as a failed log write is.
func (r *runner) tableErr(err error) {
	if err == nil {
		return
	}
	if r.log.path == NoLog {
		r.log.fail(err)
		r.say("%v", err)
		return
	}
	r.say("%v (the run log has it)", err)
}

// exit turns a would-be success into ExitWrapper when a record was lost: a
// job whose runs are not recorded must not look fine to its scheduler.
func (r *runner) exit(code int) int {
	if code == 0 && r.log.failed != nil {
		return ExitWrapper
	}
	return code
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	_ = retryEINTR(func() error { return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) })
}

// startErrorCode maps an error of starting the command to the wrapper's exit
// code: 127 when it does not exist, 126 when it cannot be executed, 125 when
// no process could be created.
func startErrorCode(err error) int {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return ExitWrapper
	}
	switch errno {
	case syscall.ENOENT, syscall.ENOTDIR:
		return ExitNotFound
	case syscall.EAGAIN, syscall.ENOMEM:
		return ExitWrapper
	}
	return ExitNotExecutable
}

// unwrapStart drops the "fork/exec PATH: " prefix of a start error.
func unwrapStart(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// unwrapExec drops exec.LookPath's `exec: "name": ` prefix when the caller
// names the command itself.
func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}
