package main

import (
	"github.com/alecthomas/kingpin/v2"

	"jobwatch/cmd/jobwatch/internal/runfirst"
	"jobwatch/wrapper"
	"jobwatch/wrapper/remote"
)

// addRunCommand adds `jobwatch run`; the returned function gives the
// parsed flags. A plain run command line never gets here: the
// runfirst package runs it before the exporter's packages are initialised.
// This one serves help, usage errors and the command lines runfirst leaves
// to kingpin (see runfirst.Parse), with the same flags, and the runs that
// need a server (the shared lock, the table): package remote.
func addRunCommand(app *kingpin.Application) (*kingpin.CmdClause, func() wrapper.Flags) {
	cmd := app.Command("run", runfirst.Help)
	values := make([]*string, len(runfirst.Flags))
	for i, fl := range runfirst.Flags {
		c := cmd.Flag(fl.Name, fl.Help).PlaceHolder(fl.PlaceHolder)
		if fl.Default != "" {
			c = c.Default(fl.Default)
		}
		values[i] = c.String()
	}
	command := cmd.Arg("command", runfirst.CommandHelp).Strings()
	return cmd, func() wrapper.Flags {
		var f wrapper.Flags
		for i, fl := range runfirst.Flags {
			fl.Set(&f, *values[i])
		}
		f.Command = *command
		f.Remote = remote.Remote{}
		return f
	}
}
