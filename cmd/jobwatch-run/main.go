// Command jobwatch-run is `jobwatch run` alone: the wrapper that runs a
// job under a lock and a timeout and records the run (docs/run.md), in a
// binary that links neither the exporter nor the shared locks' clients, so
// that a cron job pays for the Go runtime and the wrapper only, not for the
// exporter's packages' initialisation, which Go runs before main.
//
// `jobwatch-run ARGS` means what `jobwatch run ARGS` means. It runs the
// usual command line itself (flags, `--`, the command: wrapper.ParseArgs)
// and hands the rest (help, a usage error, a shared lock or a job_runs
// table) to `jobwatch run` with the same arguments, by exec: the jobwatch
// beside it, else the one in PATH.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/jobwatch/jobwatch/wrapper"
)

func main() {
	args := os.Args[1:]
	f, ok := wrapper.ParseArgs(args)
	if ok && !f.NeedsRemote() {
		os.Exit(wrapper.RunFlags(f))
	}
	err := handOff(args)
	fmt.Fprintf(os.Stderr, "jobwatch-run: %v\n", err)
	if ok {
		// A run with a shared lock or a table, and no jobwatch to take
		// it: the wrapper records it as it does a server it cannot
		// reach (--lock-unavailable; the table's warning).
		os.Exit(wrapper.RunFlags(f))
	}
	os.Exit(wrapper.ExitWrapper)
}

// handOff replaces this process with `jobwatch run args`; it returns only
// when it could not.
func handOff(args []string) error {
	bin, err := jobwatchBinary()
	if err != nil {
		return err
	}
	argv := append([]string{"jobwatch", "run"}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return fmt.Errorf("running %s run: %w", bin, err)
	}
	return nil
}

// jobwatchBinary finds jobwatch: beside this binary (both are installed in
// /usr/bin, and a build directory holds both), else in PATH.
func jobwatchBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "jobwatch")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	bin, err := exec.LookPath("jobwatch")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", errors.New("this command line needs jobwatch run, and jobwatch is neither beside jobwatch-run nor in PATH")
		}
		return "", fmt.Errorf("finding jobwatch: %w", err)
	}
	return bin, nil
}
