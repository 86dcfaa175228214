package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/internal/testsupport/promcheck"
)

// tableMetricRE is a row of the metrics table: | `name` | type | ...
var tableMetricRE = regexp.MustCompile("(?m)^\\| `([a-z_:][a-z0-9_:]*)` \\|")

// TestMetricsDocumented: docs/metrics.md has a row for every jobwatch
// metric the real exporter describes, and no row for one it does not.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range tableMetricRE.FindAllStringSubmatch(string(doc), -1) {
		if documented[m[1]] {
			t.Errorf("docs/metrics.md documents %s twice", m[1])
		}
		documented[m[1]] = true
	}
	exported, err := promcheck.Names(exporterCollectors(t))
	if err != nil {
		t.Fatal(err)
	}
	// jobwatch_build_info is the standard build-info metric, named in the
	// text below the table rather than in it.
	const buildInfo = "jobwatch_build_info"
	if !exported[buildInfo] || !strings.Contains(string(doc), "`"+buildInfo+"`") {
		t.Errorf("docs/metrics.md should name %s, which the exporter describes", buildInfo)
	}
	var names []string
	for n := range exported {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.HasPrefix(n, "jobwatch_") && n != buildInfo && !documented[n] {
			t.Errorf("docs/metrics.md has no row for %s, which the exporter describes", n)
		}
	}
	for n := range documented {
		if !exported[n] {
			t.Errorf("docs/metrics.md documents %s, which the exporter does not describe", n)
		}
	}
	if len(documented) < len(promcheck.Contract)-1 {
		t.Errorf("found %d metrics in the table of docs/metrics.md, want at least %d: is the row pattern still finding them?", len(documented), len(promcheck.Contract)-1)
	}
}

// exporterCollectors are the real exporter's collectors on a one-job
// config, whose metric names promcheck lists.
func exporterCollectors(t *testing.T) []prometheus.Collector {
	t.Helper()
	e, err := exporter.New(exporter.Options{ConfigFile: promcheck.ProbeConfig(t), StateDir: t.TempDir(), Host: "probe"})
	if err != nil {
		t.Fatalf("starting the exporter: %v", err)
	}
	return e.Collectors()
}

// TestEveryJobSeriesFactOrVerdict: the "Facts and verdicts" section of
// docs/metrics.md names every jobwatch_job_* metric the exporter describes,
// so a new series says whether it shows at once or waits for the watermark.
func TestEveryJobSeriesFactOrVerdict(t *testing.T) {
	doc, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Facts and verdicts\n")
	if !ok {
		t.Fatal(`docs/metrics.md has no "## Facts and verdicts" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	exported, err := promcheck.Names(exporterCollectors(t))
	if err != nil {
		t.Fatal(err)
	}
	for n := range exported {
		if strings.HasPrefix(n, "jobwatch_job_") && !strings.Contains(section, "`"+n+"`") && !strings.Contains(section, "`"+n+"{") {
			t.Errorf("docs/metrics.md's Facts and verdicts does not say which %s is", n)
		}
	}
}
