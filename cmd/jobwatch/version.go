package main

import (
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

// fillVersion fills what the Makefile's ldflags would have set from the
// build information the go command records, so that a plain `go build`
// reports its module version and VCS revision and time in --version,
// jobwatch_build_info and the landing page.
func fillVersion() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		applyBuildInfo(bi)
	}
}

func applyBuildInfo(bi *debug.BuildInfo) {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if version.Version == "" {
		v := bi.Main.Version
		if v == "" || v == "(devel)" {
			v = "devel"
		}
		// A module pseudo-version's revision and a "+dirty" suffix say
		// nothing the revision does not.
		version.Version = strings.TrimSuffix(v, "+dirty")
	}
	if version.Revision == "" {
		if rev := settings["vcs.revision"]; rev != "" {
			if settings["vcs.modified"] == "true" {
				rev += "-modified"
			}
			version.Revision = rev
		}
	}
	if version.BuildDate == "" {
		version.BuildDate = settings["vcs.time"]
	}
}

// usageTemplate is kingpin's default usage with the flags of the default
// command, serve, listed in the top-level help too.
var usageTemplate = func() string {
	const anchor = "{{if .Context.Args -}}"
	const serveFlags = `{{if not .Context.SelectedCommand -}}
{{range .App.Commands -}}
{{if .Default -}}
Flags of {{.FullCommand}} (the default command):
{{.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end -}}
{{end -}}
{{end -}}
`
	if !strings.Contains(kingpin.DefaultUsageTemplate, anchor) {
		panic("kingpin's usage template changed: cannot add serve's flags")
	}
	return strings.Replace(kingpin.DefaultUsageTemplate, anchor, serveFlags+anchor, 1)
}()
