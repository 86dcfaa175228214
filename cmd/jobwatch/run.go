package main

import (
	"github.com/alecthomas/kingpin/v2"

	"jobwatch/wrapper"
)

// addRunCommand adds `jobwatch run`; the returned function runs it and
// returns the exit code. Durations and the skip code are parsed by the
// wrapper, so that a malformed value in a crontab line is recorded as a
// failed run instead of only a usage error nobody reads.
func addRunCommand(app *kingpin.Application) (*kingpin.CmdClause, func() int) {
	cmd := app.Command("run", "Run a command under a non-blocking lock and a timeout, recording each run in a run log.")
	job := cmd.Flag("job", "Job name, as in jobwatch.yml (required).").PlaceHolder("NAME").String()
	log := cmd.Flag("log", "Run log to append records to (default "+wrapper.DefaultLog+").").Default(wrapper.DefaultLog).PlaceHolder("PATH").String()
	lock := cmd.Flag("lock", "Lock file: skip the run if another run holds it (created if missing, never deleted).").PlaceHolder("PATH").String()
	timeout := cmd.Flag("timeout", "Kill the command's process group after this long (e.g. 30m, 90s, or seconds); 0: no timeout.").Default("0").PlaceHolder("DURATION").String()
	killAfter := cmd.Flag("kill-after", "After the timeout's SIGTERM, SIGKILL the process group this much later.").Default(wrapper.DefaultKillAfter.String()).PlaceHolder("DURATION").String()
	skipCode := cmd.Flag("skip-exit-code", "Exit code when the run is skipped because the lock is held.").Default("0").PlaceHolder("N").String()
	command := cmd.Arg("command", "The command and its arguments, after --.").Strings()
	return cmd, func() int {
		return wrapper.RunFlags(wrapper.Flags{
			Job: *job, Log: *log, Lock: *lock,
			Timeout: *timeout, KillAfter: *killAfter, SkipExitCode: *skipCode,
			Command: *command,
		})
	}
}
