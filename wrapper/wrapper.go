// Package wrapper implements `jobwatch run`: it runs one scheduled command
// under a non-blocking lock and a hard timeout, and appends a start, end or
// skip record for every run to the run log that jobwatch's runlog source reads.
package wrapper

import (
	"encoding/binary"
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
		return ExitWrapper
	}
	if !JobNameRE.MatchString(o.Job) {
		fmt.Fprintf(o.Stderr, "jobwatch run: invalid job name %q: must match %s\n", o.Job, JobNameRE)
		return ExitWrapper
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	r := &runner{o: o, log: &runLog{path: o.Log}, host: host, runID: newRunID(), begin: o.Now()}
	return r.run()
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
		return r.fail(ExitWrapper, 0, errors.New("no command given after --"))
	case o.Timeout < 0:
		return r.fail(ExitWrapper, 0, fmt.Errorf("--timeout must not be negative, got %s", o.Timeout))
	case o.KillAfter < 0:
		return r.fail(ExitWrapper, 0, fmt.Errorf("--kill-after must not be negative, got %s", o.KillAfter))
	case o.SkipExitCode < 0 || o.SkipExitCode > 255:
		return r.fail(ExitWrapper, 0, fmt.Errorf("--skip-exit-code must be 0-255, got %d", o.SkipExitCode))
	}

	mode := "nolock"
	var lock *os.File
	if o.Lock != "" {
		var err error
		if lock, err = openLock(o.Lock); err != nil {
			return r.fail(ExitWrapper, 0, err)
		}
		// The wrapper holds the lock too until it has written the end record,
		// so a next run's start never precedes this run's end in the log.
		defer lock.Close()
		mode = "lock"
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
		return r.fail(code, 0, fmt.Errorf("%s: %w", o.Command[0], unwrapExec(err)))
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

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return r.fail(ExitWrapper, 0, fmt.Errorf("starting job: %w", err))
	}
	defer statusR.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		statusW.Close()
		return r.fail(ExitWrapper, 0, fmt.Errorf("starting job: %w", err))
	}
	defer gateW.Close()

	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        append([]string{childArg0, mode, path}, o.Command...),
		Stdin:       os.Stdin,
		Stdout:      o.Stdout,
		Stderr:      o.Stderr,
		ExtraFiles:  []*os.File{lock, statusW, gateR}, // fds 3, 4, 5
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   time.Second, // if Stdout is not a file and a leftover child keeps the pipe
	}
	err = cmd.Start()
	statusW.Close()
	gateR.Close()
	if err != nil {
		return r.fail(ExitWrapper, 0, fmt.Errorf("starting job: %w", err))
	}
	pid := cmd.Process.Pid

	msg, errno, ok := readStatus(statusR)
	switch {
	case !ok:
		code := r.waitCode(cmd)
		return r.fail(code, pid, fmt.Errorf("job process %d ended before the command started (exit code %d)", pid, code))
	case msg == msgLocked:
		r.waitCode(cmd)
		return r.skip(lockHolder(lock))
	case msg == msgLockErr:
		r.waitCode(cmd)
		return r.fail(ExitWrapper, pid, fmt.Errorf("locking %s: %w", o.Lock, errno))
	}

	// The lock is held; the command waits at the gate until the start record
	// is written.
	started := o.Now()
	r.begin = started
	r.record(startRecord{Time: formatTime(started), Job: o.Job, Event: "start", Host: r.host, PID: pid, RunID: r.runID})
	if _, err := gateW.Write([]byte{msgGo}); err != nil {
		// The job's process died before the gate opened (a forwarded signal).
		code := r.waitCode(cmd)
		return r.end(pid, code, false)
	}
	gateW.Close()
	if msg, errno, ok := readStatus(statusR); ok && msg == msgExecErr {
		code := r.waitCode(cmd)
		fmt.Fprintf(o.Stderr, "jobwatch run: job %s: %s: %v\n", o.Job, o.Command[0], errno)
		return r.end(pid, code, false)
	}
	statusR.Close()

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
// that the failure shows in metrics. pid is the job's process if one was
// started, else 0 for the wrapper's own.
func (r *runner) fail(code, pid int, err error) int {
	fmt.Fprintf(r.o.Stderr, "jobwatch run: job %s: %v\n", r.o.Job, err)
	if pid == 0 {
		pid = os.Getpid()
	}
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

// readStatus reads one message from the job's process; ok is false at EOF,
// which after the gate means the exec succeeded.
func readStatus(f *os.File) (kind byte, errno syscall.Errno, ok bool) {
	var m [msgLen]byte
	if _, err := io.ReadFull(f, m[:]); err != nil {
		return 0, 0, false
	}
	return m[0], syscall.Errno(binary.LittleEndian.Uint32(m[1:])), true
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	_ = retryEINTR(func() error { return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) })
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
