package wrapper

import (
	"encoding/binary"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The job's process starts as a copy of the wrapper's own binary
// (/proc/self/exe) with argv[0] set to childArg0. That copy takes the lock,
// waits until the wrapper has written the start record, and then replaces
// itself with the command by execve(2): the job keeps the pid the start record
// names, and /proc/locks names the job's pid as the lock holder, even after
// the wrapper is gone.
//
// Its argv: childArg0, "lock" or "nolock", the command's resolved path, the
// command's argv. Its file descriptors, besides 0-2:
const (
	childArg0 = "jobwatch-run-exec"
	lockFD    = 3 // the lock file, inherited by the command
	statusFD  = 4 // child -> wrapper: 5-byte messages; EOF once the exec succeeded
	gateFD    = 5 // wrapper -> child: one byte once the start record is written
)

// Messages on the status pipe: one byte of kind, four of errno.
const (
	msgReady    = 'R' // lock taken (or none asked for)
	msgLocked   = 'L' // lock held by another process
	msgLockErr  = 'F' // flock failed otherwise
	msgExecErr  = 'X' // execve failed
	msgGo       = 'G' // on the gate pipe
	msgLen      = 5
	childFailed = 125
)

func init() {
	if len(os.Args) >= 3 && os.Args[0] == childArg0 {
		os.Exit(child(os.Args[1], os.Args[2], os.Args[3:]))
	}
}

// child runs in the job's process before the command is executed. It returns
// only when the command could not be started.
func child(mode, path string, argv []string) int {
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(gateFD)
	if mode == "lock" {
		err := retryEINTR(func() error { return unix.Flock(lockFD, unix.LOCK_EX|unix.LOCK_NB) })
		switch {
		case err == unix.EWOULDBLOCK:
			send(msgLocked, nil)
			return 0
		case err != nil:
			send(msgLockErr, err)
			return childFailed
		}
	}
	send(msgReady, nil)
	var b [1]byte
	var n int
	err := retryEINTR(func() (err error) { n, err = unix.Read(gateFD, b[:]); return err })
	if err != nil || n != 1 || b[0] != msgGo {
		return childFailed // the wrapper is gone before the run was recorded: do not run
	}
	unix.Close(gateFD)
	err = syscall.Exec(path, argv, os.Environ())
	send(msgExecErr, err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}

func send(kind byte, err error) {
	var m [msgLen]byte
	m[0] = kind
	if errno, ok := err.(unix.Errno); ok {
		binary.LittleEndian.PutUint32(m[1:], uint32(errno))
	}
	_ = retryEINTR(func() error { _, err := unix.Write(statusFD, m[:]); return err })
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
