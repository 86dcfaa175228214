package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"

	"github.com/jobwatch/jobwatch/wrapper/remote"
)

// TestPlainRunParsesAsKingpin checks that a command line main runs at once
// (plainRun) means to it what it means to kingpin's application, and that
// the command lines it leaves to kingpin are not `run ... -- command` ones
// it could have taken.
func TestPlainRunParsesAsKingpin(t *testing.T) {
	tests := [][]string{
		{"run", "--job", "b", "--log", "/tmp/r.log", "--lock", "/tmp/l", "--timeout", "10s", "--", "true"},
		{"run", "--job=b", "--lock-name=a=b@c", "--record-table=", "--", "sh", "-c", "exit 3"},
		{"run", "--job", "b", "--", "cmd", "--job", "x", "--", "@f", "--help"},
		{"run", "--job=b", "--log=-", "--timeout=-1", "--", "true"},
		{"run", "--job=j", "--log=l", "--lock=k", "--timeout=1", "--kill-after=2", "--skip-exit-code=3",
			"--lock-name=n", "--lock-ttl=t", "--lock-unavailable=x", "--on-lock-lost=y", "--record-table=rt", "--", "c"},
		{"run", "--job", "b", "--skipped-exit", "75", "--skipped-exit=76", "--skipped-output", "^lock held", "--skipped-reason=locked", "--", "true"},
		{"run", "--job", "b", "--lock-redis", "redis://h:1/0", "--lock-ttl=10s", "--lock-redis-password-file", "p", "--", "true"},
		{"run", "--job", "b", "--lock-mysql=u@tcp(h)/", "--lock-mysql-dsn-file=f", "--record-mysql", "u@tcp(h)/",
			"--record-mysql-dsn-file", "g", "--", "true"},
	}
	for _, args := range tests {
		early, ok := plainRun(args)
		if !ok {
			t.Errorf("plainRun(%q): left to kingpin", args)
			continue
		}
		// The application as run builds it, with the global flags.
		app := kingpin.New("jobwatch", "").Terminate(nil).UsageWriter(io.Discard).ErrorWriter(io.Discard)
		addVersionFlag(app)
		app.HelpFlag.Short('h')
		flag.AddFlags(app, &promslog.Config{})
		app.Command("serve", "").Default()
		runCmd, runFlags := addRunCommand(app)
		cmd, err := app.Parse(args)
		if err != nil || cmd != runCmd.FullCommand() {
			t.Errorf("kingpin on %q: command %q, %v", args, cmd, err)
			continue
		}
		if _, isRemote := early.Remote.(remote.Remote); !isRemote {
			t.Errorf("plainRun(%q) has Remote %T, want remote.Remote", args, early.Remote)
		}
		if got := runFlags(); !reflect.DeepEqual(got, early) {
			t.Errorf("%q:\nkingpin   %+v\nplainRun  %+v", args, got, early)
		}
	}
	for _, args := range [][]string{
		nil,
		{"serve", "--", "true"},
		{"--log.level=debug", "run", "--job", "b", "--", "true"},
		{"run", "--help"},
		{"run", "--job", "b", "true"},
	} {
		if _, ok := plainRun(args); ok {
			t.Errorf("plainRun(%q) took a command line that is kingpin's", args)
		}
	}
}
