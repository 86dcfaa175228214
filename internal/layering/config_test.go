package layering

import (
	"strings"
	"testing"
)

// config reads the file's top level, the jobs and the list of sources;
// every source's block and every service's (checkins:) is decoded by its
// own package, registered with config. So config knows no source's
// business: it imports no source package and none of their helpers
// (internal/jobruns, the job_runs table's), nor a database.
func TestConfigOwnsNoSourceBlock(t *testing.T) {
	for _, d := range goList(t, "-deps", "github.com/jobwatch/jobwatch/config") {
		rest, ours := strings.CutPrefix(d, "github.com/jobwatch/jobwatch/")
		switch {
		case ours && (strings.HasPrefix(rest, "sources") || rest == "internal/jobruns"),
			d == "database/sql", strings.HasPrefix(d, "github.com/go-sql-driver/"):
			t.Errorf("config imports %s (see go list -deps jobwatch/config)", d)
		}
	}
}
