package sources_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
	_ "github.com/jobwatch/jobwatch/sources/all"
)

func TestEveryTypeIsRegistered(t *testing.T) {
	if got, want := config.SourceTypes(), []string{"journal", "locks", "mysql", "runlog"}; !slices.Equal(got, want) {
		t.Fatalf("types %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a type twice did not panic")
		}
	}()
	sources.Register("runlog", nil)
}

// A source is built from its entry, whatever its type, without the caller
// knowing the type.
func TestNewBuildsEveryType(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`jobs: [{name: a, every: 1h}]
sources:
  - {name: r, type: runlog, path: /tmp/x.log, format: logfmt}
  - {name: m, type: mysql, dsn: "u:p@tcp(127.0.0.1:1)/db"}
  - {name: j, type: journal, units: {a.service: a}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range cfg.Sources {
		s, err := sources.New(sc, sources.Deps{Jobs: []string{"a"}})
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if s.Name() != sc.Name || s.Type() != sc.Type {
			t.Errorf("built %s of type %s from %s of type %s", s.Name(), s.Type(), sc.Name, sc.Type)
		}
	}
	if _, err := sources.New(config.Source{Name: "x", Type: "runlog"}, sources.Deps{}); err == nil {
		t.Error("built a source from an entry that was never decoded")
	}
}
