// Package wrapper implements `jobwatch run`: it runs one scheduled command
// under a non-blocking lock and a hard timeout, and appends a start, end or
// skip record for every run to the run log that jobwatch's runlog source reads.
package wrapper

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of the flags.
const (
	DefaultLog       = "/var/log/jobwatch/runs.log"
	DefaultKillAfter = 10 * time.Second
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

// JobNameRE is what a job name may look like (the same as in jobwatch.yml).
var JobNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]*$`)

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
	// Stdout and Stderr are the job's; the wrapper's own messages go to
	// Stderr. os.Stdout and os.Stderr when nil.
	Stdout, Stderr io.Writer
	Now            func() time.Time
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
	if o.Log == "" {
		o.Log = DefaultLog
	}
	if o.Job == "" {
		fmt.Fprintln(o.Stderr, "jobwatch run: --job is required")
		return nil, ExitWrapper
	}
	if !JobNameRE.MatchString(o.Job) {
		fmt.Fprintf(o.Stderr, "jobwatch run: invalid job name %q: must match %s\n", o.Job, JobNameRE)
		return nil, ExitWrapper
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &runner{o: o, log: &runLog{path: o.Log}, host: host, runID: newRunID(), begin: o.Now()}, 0
}

type runner struct {
	o     Options
	log   *runLog
	host  string
	runID string
	begin time.Time
}

func (r *runner) run() int {
	o := r.o
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return r.fail(ExitWrapper, errors.New("no command given after --"))
	case o.Timeout < 0:
		return r.fail(ExitWrapper, fmt.Errorf("--timeout must not be negative, got %s", o.Timeout))
	case o.KillAfter < 0:
		return r.fail(ExitWrapper, fmt.Errorf("--kill-after must not be negative, got %s", o.KillAfter))
	case o.SkipExitCode < 0 || o.SkipExitCode > 255:
		return r.fail(ExitWrapper, fmt.Errorf("--skip-exit-code must be 0-255, got %d", o.SkipExitCode))
	}

	var lock *os.File
	if o.Lock != "" {
		var err error
		if lock, err = openLock(o.Lock); err != nil {
			return r.fail(ExitWrapper, err)
		}
		// The job inherits the lock as fd 3; the wrapper keeps its fd too,
		// until it has written the end record, so a next run's start never
		// precedes this run's end in the log. The lock lasts until every
		// holder has closed it: a killed wrapper leaves it with the job.
		defer lock.Close()
		err = retryEINTR(func() error { return unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
		if errors.Is(err, unix.EWOULDBLOCK) {
			return r.skip(lockHolder(lock))
		}
		if err != nil {
			return r.fail(ExitWrapper, fmt.Errorf("locking %s: %w", o.Lock, err))
		}
		if afterLockHook != nil {
			afterLockHook()
		}
	}

	path, err := exec.LookPath(o.Command[0])
	if errors.Is(err, exec.ErrDot) {
		err = nil // found through "." in PATH: run it, as a shell would
	}
	if err != nil {
		code := ExitNotFound
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			code = ExitNotExecutable
		}
		return r.fail(code, fmt.Errorf("%s: %w", o.Command[0], unwrapExec(err)))
	}

	// Signals for the job, from now on: forwarded to its process group once it
	// exists. Signals the wrapper was started ignoring (nohup) stay ignored.
	sigs := make(chan os.Signal, 8)
	for _, s := range []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	defer signal.Stop(sigs)

	cmd := &exec.Cmd{
		Path:        path,
		Args:        o.Command, // executed directly, never through a shell
		Stdin:       os.Stdin,
		Stdout:      o.Stdout,
		Stderr:      o.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, // its own process group: timeouts and signals reach its children
		WaitDelay:   time.Second,                         // if Stdout is not a file and a leftover child keeps the pipe
	}
	if lock != nil {
		cmd.ExtraFiles = []*os.File{lock} // fd 3, without close-on-exec
	}
	if err := cmd.Start(); err != nil {
		return r.fail(startErrorCode(err), fmt.Errorf("%s: %w", o.Command[0], unwrapStart(err)))
	}
	// The pid is known only now, so the command may already be running when
	// the start record is written.
	pid := cmd.Process.Pid
	r.begin = o.Now()
	r.record(startRecord{Time: formatTime(r.begin), Job: o.Job, Event: "start", Host: r.host, PID: pid, RunID: r.runID})

	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()
	var timeoutC, killC <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	timedOut := false
	var killDeadline time.Time
wait:
	for {
		select {
		case <-exited:
			break wait
		case s := <-sigs:
			signalGroup(pid, s.(syscall.Signal))
		case <-timeoutC:
			timedOut = true
			fmt.Fprintf(o.Stderr, "jobwatch run: job %s: timed out after %s, sending SIGTERM to process group %d\n", o.Job, o.Timeout, pid)
			signalGroup(pid, unix.SIGTERM)
			signalGroup(pid, unix.SIGCONT) // a stopped process must see the SIGTERM
			killDeadline = time.Now().Add(o.KillAfter)
			t := time.NewTimer(o.KillAfter)
			defer t.Stop()
			killC = t.C
		case <-killC:
			signalGroup(pid, unix.SIGKILL)
		}
	}
	if timedOut {
		// The leader is a zombie until reaped below, so pgid cannot be reused.
		reapGroup(pid, killDeadline)
	}
	code := r.waitCode(cmd)
	return r.end(pid, code, timedOut)
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
func (r *runner) end(pid, code int, timedOut bool) int {
	now := r.o.Now()
	status := statusSuccess
	switch {
	case timedOut:
		status, code = statusTimeout, ExitTimeout
	case code != 0:
		status = statusFailure
	}
	r.record(endRecord{Time: formatTime(now), Job: r.o.Job, Event: "end", Host: r.host, PID: pid, RunID: r.runID,
		Status: status, ExitCode: code, Duration: seconds(now.Sub(r.begin))})
	return r.exit(code)
}

// fail reports why the job could not run and records it as a failed run, so
// that the failure shows in metrics. No job process exists: the record's pid
// is the wrapper's.
func (r *runner) fail(code int, err error) int {
	fmt.Fprintf(r.o.Stderr, "jobwatch run: job %s: %v\n", r.o.Job, err)
	pid := os.Getpid()
	now := r.o.Now()
	r.record(endRecord{Time: formatTime(now), Job: r.o.Job, Event: "end", Host: r.host, PID: pid, RunID: r.runID,
		Status: statusFailure, ExitCode: code, Duration: seconds(now.Sub(r.begin))})
	return r.exit(code)
}

// skip records that the lock was held.
func (r *runner) skip(holder int) int {
	r.record(skipRecord{Time: formatTime(r.o.Now()), Job: r.o.Job, Event: "skip", Host: r.host, PID: os.Getpid(),
		Reason: "locked", HolderPID: holder})
	return r.exit(r.o.SkipExitCode)
}

func (r *runner) record(rec any) {
	if err := r.log.write(rec); err != nil {
		fmt.Fprintf(r.o.Stderr, "jobwatch run: job %s: %v\n", r.o.Job, err)
	}
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
