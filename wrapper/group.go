package wrapper

import (
	"bytes"
	"os"
	"slices"
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
	for _, pid := range pids() {
		if st, ok := readStat(pid); ok && st.pgrp == pgid && st.live() {
			return true
		}
	}
	return false
}

// procStat is what jobwatch reads of /proc/PID/stat.
type procStat struct {
	state      byte
	ppid, pgrp int
}

// live: not a zombie (exited, not yet reaped) nor dead.
func (s procStat) live() bool { return s.state != 'Z' && s.state != 'X' }

// parseStat reads a /proc/PID/stat line: "PID (COMM) STATE PPID PGRP ...",
// where COMM may itself hold ") ".
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, true
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// pids lists the processes in /proc, in ascending order.
func pids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var out []int
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
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
