// Package runremote is package runfirst for the runs with a shared lock or
// a job_runs table: its init runs them once wrapper/remote's clients (and
// the network stack they need) are initialised, which is still before the
// exporter's packages (client_golang, net/http, exporter-toolkit's
// dependencies) are. Command lines without those options have been run by
// runfirst already, which it imports; the rest are main's.
package runremote

import (
	"os"

	"github.com/jobwatch/jobwatch/cmd/jobwatch/internal/runfirst"
	"github.com/jobwatch/jobwatch/wrapper/remote"
)

func init() {
	if f, ok := runfirst.ParseRemote(os.Args[1:]); ok {
		f.Remote = remote.Remote{}
		runfirst.Exit(f)
	}
}
