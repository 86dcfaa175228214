package main

import (
	"github.com/alecthomas/kingpin/v2"

	"github.com/jobwatch/jobwatch/wrapper"
	"github.com/jobwatch/jobwatch/wrapper/remote"
)

// plainRun returns the flags of args (the command line without the program
// name) when it is `run` and arguments wrapper.ParseArgs reads: main runs
// those at once. Every other command line goes to kingpin.
func plainRun(args []string) (wrapper.Flags, bool) {
	if len(args) == 0 || args[0] != "run" {
		return wrapper.Flags{}, false
	}
	f, ok := wrapper.ParseArgs(args[1:])
	f.Remote = remote.Remote{}
	return f, ok
}

// addRunCommand adds `jobwatch run`; the returned function gives the
// parsed flags. The usual command line never gets here (plainRun); this one
// serves help, usage errors and the command lines ParseArgs leaves to
// kingpin, with the same flags.
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
