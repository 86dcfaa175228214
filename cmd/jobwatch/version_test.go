package main

import (
	"runtime/debug"
	"testing"

	"github.com/prometheus/common/version"
)

func TestApplyBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "003f1e39ce24"}, {Key: "vcs.time", Value: "2026-12-01T09:08:41Z"}}
	for _, tc := range []struct {
		name                     string
		ldflags                  [3]string // Version, Revision, BuildDate set by the Makefile
		main                     string
		settings                 []debug.BuildSetting
		version, revision, bdate string
	}{
		{name: "go build in a clone", main: "v0.0.0-20261201090841-003f1e39ce24", settings: vcs,
			version: "v0.0.0-20261201090841-003f1e39ce24", revision: "003f1e39ce24", bdate: "2026-12-01T09:08:41Z"},
		{name: "modified work tree", main: "v0.0.0-20261201090841-003f1e39ce24+dirty", settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			version: "v0.0.0-20261201090841-003f1e39ce24", revision: "003f1e39ce24-modified", bdate: "2026-12-01T09:08:41Z"},
		{name: "tagged module", main: "v1.2.0", version: "v1.2.0"},
		{name: "no VCS information", main: "(devel)", version: "devel"},
		{name: "ldflags win", ldflags: [3]string{"v1.3.0", "abc", "20261201-09:00:00"}, main: "(devel)", settings: vcs,
			version: "v1.3.0", revision: "abc", bdate: "20261201-09:00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := [3]string{version.Version, version.Revision, version.BuildDate}
			t.Cleanup(func() { version.Version, version.Revision, version.BuildDate = saved[0], saved[1], saved[2] })
			version.Version, version.Revision, version.BuildDate = tc.ldflags[0], tc.ldflags[1], tc.ldflags[2]
			applyBuildInfo(&debug.BuildInfo{Main: debug.Module{Path: "jobwatch", Version: tc.main}, Settings: tc.settings})
			if version.Version != tc.version || version.Revision != tc.revision || version.BuildDate != tc.bdate {
				t.Errorf("got version %q revision %q date %q, want %q %q %q",
					version.Version, version.Revision, version.BuildDate, tc.version, tc.revision, tc.bdate)
			}
		})
	}
}
