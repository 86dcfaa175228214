package wrapper

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// signalGroup sends sig to every process of the job's process group.
func signalGroup(pgid int, sig unix.Signal) {
	_ = unix.Kill(-pgid, sig)
}

// groupAlive reports whether a process other than a zombie is still in
// process group pgid. The job's leader is a zombie while the wrapper has not
// reaped it, which keeps pgid from being reused meanwhile.
func groupAlive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if state, pg, ok := parseStat(b); ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat returns the state and process group of a /proc/PID/stat line:
// "PID (COMM) STATE PPID PGRP ...", where COMM may itself hold ") ".
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}

// reapGroup waits, once the job's leader has exited after a timeout, for the
// rest of its process group to exit until deadline, then kills what is left:
// no process of a timed-out job survives it.
func reapGroup(pgid int, deadline time.Time) {
	const poll = 20 * time.Millisecond
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			signalGroup(pgid, unix.SIGKILL)
			// SIGKILL cannot be ignored; wait (bounded) until the kernel is done.
			for i := 0; i < 100 && groupAlive(pgid); i++ {
				time.Sleep(poll)
			}
			return
		}
		time.Sleep(poll)
	}
}
