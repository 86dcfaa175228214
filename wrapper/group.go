package wrapper

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobwatch/jobwatch/internal/procfs"
)

// signalGroup sends sig to every process of the job's process group.
func signalGroup(pgid int, sig unix.Signal) {
	_ = unix.Kill(-pgid, sig)
}

// groupAlive reports whether a process other than a zombie is still in
// process group pgid. The job's leader is a zombie while the wrapper has not
// reaped it, which keeps pgid from being reused meanwhile.
// A process except (the reaper itself; 0 for none) is not counted.
func groupAlive(pgid, except int) bool {
	for _, pid := range pids() {
		if st, ok := readStat(pid); ok && st.pgrp == pgid && pid != except && st.live() {
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

// parseStat reads a /proc/PID/stat line with the shared parser.
func parseStat(b []byte) (procStat, bool) {
	st, ok := procfs.ParseStat(b)
	return procStat{state: st.State, ppid: st.PPID, pgrp: st.PGRP}, ok
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, bool) {
	st, ok := procfs.ReadStat(pid)
	return procStat{state: st.State, ppid: st.PPID, pgrp: st.PGRP}, ok
}

// pids lists the processes in /proc, in ascending order.
func pids() []int { return procfs.Pids() }

// reapGroup waits, once the job's leader has exited after a timeout, for the
// rest of its process group to exit until deadline, then kills what is left:
// no process of a timed-out job survives it. except is not waited for (the
// job's reaper, which reaps its group so; 0 for none).
func reapGroup(pgid, except int, deadline time.Time) {
	const poll = 20 * time.Millisecond
	for groupAlive(pgid, except) {
		if time.Now().After(deadline) {
			signalGroup(pgid, unix.SIGKILL)
			// SIGKILL cannot be ignored; wait (bounded) until the kernel is done.
			for i := 0; i < 100 && groupAlive(pgid, except); i++ {
				time.Sleep(poll)
			}
			return
		}
		time.Sleep(poll)
	}
}
