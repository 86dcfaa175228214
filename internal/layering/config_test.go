package layering

import (
	"strings"
	"testing"
)

// config reads the file's top level, the jobs and the list of sources;
// every source's block and every service's (checkins:) is decoded by its
// own package, registered with config. So config knows no source's
// business: it imports no source package and none of their helpers.
func TestConfigOwnsNoSourceBlock(t *testing.T) {
	for _, d := range importsOf(t, "github.com/jobwatch/jobwatch/config") {
		rest := strings.TrimPrefix(d, "github.com/jobwatch/jobwatch/")
		switch rest {
		case "internal/duration", "internal/jobname", "schedule":
		default:
			t.Errorf("config imports %s (see go list -deps jobwatch/config)", d)
		}
	}
}
