package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"

	"github.com/jobwatch/jobwatch/cmd/jobwatch/internal/runfirst"
)

// TestRunFirstParsesAsKingpin checks that a command line runfirst runs
// itself means to it what it means to jobwatch's full command line.
func TestRunFirstParsesAsKingpin(t *testing.T) {
	tests := [][]string{
		{"run", "--job", "b", "--log", "/tmp/r.log", "--lock", "/tmp/l", "--timeout", "10s", "--", "true"},
		{"run", "--job=b", "--lock-name=a=b@c", "--record-table=", "--", "sh", "-c", "exit 3"},
		{"run", "--job", "b", "--", "cmd", "--job", "x", "--", "@f", "--help"},
		{"run", "--job=b", "--log=-", "--timeout=-1", "--", "true"},
		{"run", "--job=j", "--log=l", "--lock=k", "--timeout=1", "--kill-after=2", "--skip-exit-code=3",
			"--lock-name=n", "--lock-ttl=t", "--lock-unavailable=x", "--on-lock-lost=y", "--record-table=rt", "--", "c"},
		{"run", "--job", "b", "--skipped-exit", "75", "--skipped-exit=76", "--skipped-output", "^lock held", "--skipped-reason=locked", "--", "true"},
	}
	for _, args := range tests {
		early, ok := runfirst.Parse(args)
		if !ok {
			t.Errorf("runfirst.Parse(%q): left to kingpin", args)
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
		got := runFlags()
		if got.Remote == nil {
			t.Errorf("kingpin's flags of %q have no Remote", args)
		}
		got.Remote = nil // runfirst's runs need none
		if !reflect.DeepEqual(got, early) {
			t.Errorf("%q:\nkingpin  %+v\nrunfirst %+v", args, got, early)
		}
	}
}

// TestRunSkipsExporterInit runs the built binary with Go's init trace: a
// plain `jobwatch run` must run before the exporter's packages are
// initialised (here client_golang's, whose default registry registers the
// Go and process collectors), so must one with a table (runremote), and a
// command line left to kingpin must still run, after every package's init.
func TestRunSkipsExporterInit(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	const exporterInit = "init github.com/prometheus/client_golang/prometheus @"
	for _, tc := range []struct {
		name     string
		args     []string
		exporter bool // whether the exporter's packages are initialised
	}{
		{"plain", []string{"run", "--job", "t", "--log", logPath, "--lock", filepath.Join(dir, "t.lock"), "--timeout", "10s", "--", "true"}, false},
		// A table that refuses connections: the run goes on, and says so.
		{"with a table (runremote)", []string{"run", "--job", "t", "--log", logPath, "--record-mysql", "u:pw@tcp(127.0.0.1:1)/db", "--", "true"}, false},
		{"without --", []string{"run", "--job", "t", "--log", logPath, "true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(readLog(t, logPath))
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v\n%s", tc.args, err, out)
			}
			if !strings.Contains(string(out), "init os @") {
				t.Fatalf("no init trace:\n%s", out)
			}
			if got := strings.Contains(string(out), exporterInit); got != tc.exporter {
				t.Errorf("%q: client_golang initialised: %v, want %v", tc.args, got, tc.exporter)
			}
			if recs := readLog(t, logPath); len(recs) != before+2 || recs[len(recs)-1]["status"] != "success" {
				t.Errorf("records %v, want a start and a successful end more than %d", recs, before)
			}
		})
	}
}
