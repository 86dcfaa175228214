package main

import (
	"github.com/alecthomas/kingpin/v2"

	_ "github.com/jobwatch/jobwatch/cmd/jobwatch/internal/runremote" // runs with a shared lock or a table, from its init
	"github.com/jobwatch/jobwatch/wrapper"
	"github.com/jobwatch/jobwatch/wrapper/remote"
)

// addRunCommand adds `jobwatch run`; the returned function gives the
// parsed flags. A plain run command line never gets here: package runfirst
// runs it before the exporter's packages are initialised, and runremote the
// same with a shared lock or a table. This one serves help, usage errors and
// the command lines they leave to kingpin (see runfirst.Parse), with the
// same flags.
func addRunCommand(app *kingpin.Application) (*kingpin.CmdClause, func() wrapper.Flags) {
	cmd := app.Command("run", wrapper.RunHelp)
	values := make([]*[]string, len(wrapper.RunFlagTable))
	for i, fl := range wrapper.RunFlagTable {
		c := cmd.Flag(fl.Name, fl.Help).PlaceHolder(fl.PlaceHolder)
		if fl.Default != "" {
			c = c.Default(fl.Default)
		}
		if fl.Repeatable() {
			values[i] = c.Strings()
		} else {
			values[i] = &[]string{""}
			c.StringVar(&(*values[i])[0])
		}
	}
	command := cmd.Arg("command", wrapper.RunCommandHelp).Strings()
	return cmd, func() wrapper.Flags {
		var f wrapper.Flags
		for i, fl := range wrapper.RunFlagTable {
			for _, v := range *values[i] {
				fl.Set(&f, v)
			}
		}
		f.Command = *command
		f.Remote = remote.Remote{}
		return f
	}
}
