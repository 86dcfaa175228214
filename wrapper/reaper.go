package wrapper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A run with a shared lock starts its job through a reaper: this binary
// again (/proc/self/exe), with argv[0] reaperArg0, leading the job's process
// group and the job's parent. It holds one end of a socket pair whose other
// end only the wrapper holds, so that when the wrapper dies (kill -9
// included) the reaper reads EOF and SIGKILLs the whole group at once: a job
// never runs on after its wrapper, whose lock is then released (MySQL) or
// left to expire (Redis). The job itself gets PR_SET_PDEATHSIG SIGKILL from
// the reaper (from a locked OS thread: the kernel ties it to the thread that
// forked), should the reaper die first.
//
// The reaper also holds the lease's stop deadline: the acquisition's from
// its command line, held from before the job starts, then the one the wrapper
// sends after every renewal; it stops the job (SIGTERM, SIGKILL
// --kill-after later) when it passes without a newer one. A wrapper paused
// or starved past its lease (SIGSTOP, swapping), even before its first
// renewal, thus still stops its job before the lease can expire.
//
// The protocol, one line each way:
//
//	reaper -> wrapper: "started PID" | "error ERRNO" | "exited MONO STOPPED"
//	wrapper -> reaper: "deadline MONO"
//
// MONO is CLOCK_MONOTONIC in nanoseconds, the one clock both processes
// share; STOPPED is 1 when the reaper stopped the job for its deadline.

// reaperArg0 marks the binary re-executed as a reaper.
const reaperArg0 = "jobwatch-run-reaper"

// reaperSock and reaperLock are the reaper's descriptors: the socket to
// the wrapper, and the lock file (the job's fd 3) when there is one; from
// reaperHeld on, copies of the shared lock's connections (SharedLock.Held),
// which the reaper keeps open so that a wrapper's death does not close
// them before the job is killed.
const (
	reaperSock = 3
	reaperLock = 4
	reaperHeld = 5
)

func init() {
	if len(os.Args) > 0 && os.Args[0] == reaperArg0 {
		os.Exit(reap(os.Args[1:]))
	}
}

// monoNow reads CLOCK_MONOTONIC, which the wrapper and its reaper share
// (Go's monotonic readings are relative to each process's start).
func monoNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// monoAt converts a time with a monotonic reading into CLOCK_MONOTONIC.
func monoAt(t time.Time) time.Duration { return monoNow() + time.Until(t) }

// timeAtMono converts a CLOCK_MONOTONIC reading into a time of this process.
func timeAtMono(m time.Duration) time.Time { return time.Now().Add(m - monoNow()) }

// reap is the reaper's main: args are --kill-after in nanoseconds, the
// acquisition's stop deadline (MONO; "0" for none), "1" when fd reaperLock
// is the lock file ("0" else), how many connections it holds from fd
// reaperHeld on, the job's path and its argv.
func reap(args []string) int {
	if len(args) < 6 {
		return ExitWrapper
	}
	killAfter, err1 := strconv.ParseInt(args[0], 10, 64)
	firstDeadline, err2 := strconv.ParseInt(args[1], 10, 64)
	held, err3 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return ExitWrapper
	}
	args = append(args[2:3], args[4:]...) // hasLock, path, argv
	for fd := reaperHeld; fd < reaperHeld+held; fd++ {
		unix.CloseOnExec(fd) // held here, not by the job; closed when the reaper dies
	}
	unix.CloseOnExec(reaperSock)
	sock := os.NewFile(reaperSock, "jobwatch run")
	// The group's signals reach the job directly; the reaper only outlives
	// them (caught, not ignored: an ignored signal would stay ignored in
	// the job). One the wrapper was started ignoring (nohup) stays ignored.
	caught := make(chan os.Signal, 1)
	for _, s := range []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(caught, s)
		}
	}
	runtime.LockOSThread() // Pdeathsig is the forking thread's
	cmd := &exec.Cmd{Path: args[1], Args: args[2:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL}}
	if args[0] == "1" {
		cmd.ExtraFiles = []*os.File{os.NewFile(reaperLock, "lock")}
	}
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = unix.EINVAL
		}
		fmt.Fprintf(sock, "error %d\n", int(errno))
		return ExitWrapper
	}
	fmt.Fprintf(sock, "started %d\n", cmd.Process.Pid)
	deadlines := make(chan time.Duration, 1)
	if firstDeadline > 0 {
		deadlines <- time.Duration(firstDeadline) // before any line: a newer one replaces it
	}
	go readDeadlines(sock, deadlines)
	code, stopped, killAt := superviseJob(cmd, deadlines, time.Duration(killAfter))
	fmt.Fprintf(sock, "exited %d %d\n", int64(monoNow()), stopped)
	if stopped == 1 {
		// What the job left in its group gets the rest of its grace, then
		// SIGKILL (the reaper's too), as after a timeout: nothing of it
		// outlives the lease.
		reapGroup(os.Getpid(), os.Getpid(), killAt)
	}
	return code
}

// readDeadlines passes on the wrapper's deadlines, the latest only; at
// EOF (the wrapper died) it kills the whole group, the reaper included.
func readDeadlines(sock io.Reader, deadlines chan time.Duration) {
	sc := bufio.NewScanner(sock)
	for sc.Scan() {
		d, ok := parseDeadline(sc.Text())
		if !ok {
			continue
		}
		select {
		case <-deadlines:
		default:
		}
		deadlines <- d
	}
	_ = unix.Kill(0, unix.SIGKILL)
}

// superviseJob waits for the job, stopping its group at the deadline. It
// returns the reaper's exit code (the job's, 128+N for signal N), 1 when
// the job was stopped for its deadline, and then when its grace ends.
func superviseJob(cmd *exec.Cmd, deadlines <-chan time.Duration, killAfter time.Duration) (code, stopped int, killAt time.Time) {
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var stopC, killC <-chan time.Time
	var stopT *time.Timer
	for {
		select {
		case <-exited:
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return 128 + int(ws.Signal()), stopped, killAt
			}
			return ws.ExitStatus(), stopped, killAt
		case d := <-deadlines:
			if stopped == 1 {
				continue // being stopped already
			}
			if stopT != nil {
				stopT.Stop()
			}
			stopT = time.NewTimer(d - monoNow())
			stopC = stopT.C
		case <-stopC:
			stopped = 1
			_ = unix.Kill(0, unix.SIGTERM)
			_ = unix.Kill(0, unix.SIGCONT)
			killC, killAt = time.After(killAfter), time.Now().Add(killAfter)
		case <-killC:
			_ = unix.Kill(0, unix.SIGKILL)
		}
	}
}

// reaperConn is the wrapper's end of a reaper.
type reaperConn struct {
	sock *os.File
	pid  int           // the job's own pid
	done chan struct{} // closed once the reaper has said how the job ended, or died
	// Set before done is closed: when the job ended (CLOCK_MONOTONIC, 0 if
	// never said) and whether the reaper stopped it for its deadline.
	ended   time.Duration
	stopped bool
}

// startReaper starts path (argv args) through a reaper, the group leader
// the wrapper signals; lock, if not nil, becomes the job's fd 3, and the
// reaper keeps held open. stopAt (zero for none) is the stop deadline the
// reaper holds from the job's start, until the wrapper sends a newer one.
// It returns the reaper's connection, and the error of starting the job
// itself.
func startReaper(cmd *exec.Cmd, lock *os.File, held []*os.File, killAfter time.Duration, stopAt time.Time) (*reaperConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reaper socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "reaper"), os.NewFile(uintptr(fds[1]), "reaper")
	hasLock := "0"
	if lock != nil {
		hasLock = "1"
	}
	cmd.ExtraFiles = append([]*os.File{theirs, lock}, held...) // a nil lock: fd 4 closed
	firstDeadline := "0"
	if !stopAt.IsZero() {
		firstDeadline = strconv.FormatInt(max(int64(monoAt(stopAt)), 1), 10) // 1: passed already
	}
	cmd.Args = append([]string{reaperArg0, strconv.FormatInt(int64(killAfter), 10), firstDeadline, hasLock, strconv.Itoa(len(held)), cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, err
	}
	rc := &reaperConn{sock: mine, done: make(chan struct{})}
	sc := bufio.NewScanner(mine)
	var line string
	if sc.Scan() {
		line = sc.Text()
	}
	if v, ok := strings.CutPrefix(line, "started "); ok {
		if rc.pid, err = strconv.Atoi(v); err == nil {
			go rc.readEnd(sc)
			return rc, nil
		}
	}
	_ = cmd.Wait()
	mine.Close()
	if v, ok := strings.CutPrefix(line, "error "); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return nil, &os.PathError{Op: "fork/exec", Path: cmd.Args[6], Err: syscall.Errno(n)}
		}
	}
	return nil, fmt.Errorf("the job's reaper ended before starting it (%q)", line)
}

// keepNonblocking undoes what passing f to a child did to the socket it
// copies: os/exec takes its descriptor with Fd, which puts it in blocking
// mode, and a copy shares its file status flags with the original, which
// the lock's connection reads with deadlines (a blocking socket ignores
// them: a check would hang on a cut network instead of failing in time).
func keepNonblocking(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), true) })
	}
}

// readEnd reads the reaper's last line.
func (rc *reaperConn) readEnd(sc *bufio.Scanner) {
	defer close(rc.done)
	for sc.Scan() {
		if ended, stopped, ok := parseExited(sc.Text()); ok {
			rc.ended, rc.stopped = ended, stopped
		}
	}
}

// parseDeadline reads the wrapper's "deadline MONO" line.
func parseDeadline(line string) (time.Duration, bool) {
	v, ok := strings.CutPrefix(line, "deadline ")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0, false
	}
	return time.Duration(n), true
}

// parseExited reads the reaper's "exited MONO STOPPED" line.
func parseExited(line string) (ended time.Duration, stopped, ok bool) {
	f := strings.Split(line, " ")
	if len(f) != 3 || f[0] != "exited" || f[2] != "0" && f[2] != "1" {
		return 0, false, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n <= 0 {
		return 0, false, false
	}
	return time.Duration(n), f[2] == "1", true
}

// setDeadline tells the reaper to stop the job at t unless told a later
// time before then.
func (rc *reaperConn) setDeadline(t time.Time) {
	fmt.Fprintf(rc.sock, "deadline %d\n", int64(monoAt(t)))
}

// end waits (after the reaper exited) for how the job ended: when, and
// whether its reaper stopped it for the lease's deadline.
func (rc *reaperConn) end() (ended time.Time, stopped bool) {
	<-rc.done
	rc.sock.Close()
	if rc.ended == 0 {
		return time.Now(), false
	}
	return timeAtMono(rc.ended), rc.stopped
}
