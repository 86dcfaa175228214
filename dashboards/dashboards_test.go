package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/internal/testsupport/promcheck"
)

// checkVars fills the dashboard's own variables for checking.
var checkVars = map[string]string{
	"cluster":    ".*",
	"job":        ".*",
	"instance":   ".*",
	"job_name":   ".*",
	"team":       ".*",
	"owner":      ".*",
	"user":       ".*",
	"unit":       ".*",
	"datasource": "prometheus",
}

func vars() map[string]string {
	m := map[string]string{}
	for k, v := range Builtin {
		m[k] = v
	}
	for k, v := range checkVars {
		m[k] = v
	}
	return m
}

func load(t *testing.T) *Dashboard {
	t.Helper()
	d, err := Parse(JSON)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestJSON: the file is valid, canonical JSON (two-space indent, as Grafana
// exports it), so diffs stay readable.
func TestJSON(t *testing.T) {
	var v any
	if err := json.Unmarshal(JSON, &v); err != nil {
		t.Fatalf("jobwatch.json: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, JSON, "", "  "); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(buf.Bytes()), bytes.TrimSpace(JSON)) {
		t.Error("jobwatch.json is not indented with two spaces: regenerate it (go generate ./mixin)")
	}
}

var bareSelector = regexp.MustCompile(`^\s*[a-zA-Z_:][a-zA-Z0-9_:]*\s*(\{[^}]*\})?\s*$`)

// TestImportable: what Grafana's dashboard import needs: a Prometheus
// datasource input, a datasource variable that defaults to it, no fixed id,
// a uid, and every panel and query on the datasource variable.
func TestImportable(t *testing.T) {
	d := load(t)
	var raw map[string]any
	if err := json.Unmarshal(JSON, &raw); err != nil {
		t.Fatal(err)
	}
	if id, ok := raw["id"]; ok && id != nil {
		t.Errorf("id is %v: an imported dashboard must have id null", id)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("uid and title are required")
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Fatalf("__inputs = %+v, want one prometheus datasource input", d.Inputs)
	}
	if !bytes.Contains(JSON, []byte(`"${`+d.Inputs[0].Name+`}"`)) {
		t.Errorf("input %s is never used", d.Inputs[0].Name)
	}
	byName := map[string]Variable{}
	for _, v := range d.Templating.List {
		byName[v.Name] = v
	}
	// One data source: every query runs on it (docs/alerts.md says so).
	if v := byName["datasource"]; v.Type != "datasource" || string(v.Query) != `"prometheus"` || v.Multi || v.IncludeAll {
		t.Errorf("variable datasource = %+v, want a single-value prometheus datasource variable", v)
	}
	// job_name's All is the jobs it lists, those of the team (owner)
	// chosen: the others' All is every value, .*.
	for _, name := range []string{"cluster", "instance", "team", "owner", "user", "unit", "job_name"} {
		v, ok := byName[name]
		if !ok {
			t.Errorf("variable %s missing", name)
			continue
		}
		allValue := ".*"
		if name == "job_name" {
			allValue = ""
		}
		if v.Type != "query" || !v.Multi || !v.IncludeAll || v.AllValue != allValue {
			t.Errorf("variable %s = %+v, want a multi-value query variable with All = %q", name, v, allValue)
		}
		if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s does not query ${datasource}", name)
		}
	}
	ids := map[int]string{}
	for _, p := range d.AllPanels() {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if x, w := p.GridPos["x"], p.GridPos["w"]; w == 0 || x+w > 24 || p.GridPos["h"] == 0 {
			t.Errorf("panel %q: bad gridPos %v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s does not use ${datasource}", p.Title, tg.RefID)
			}
			if p.Type == "table" && (tg.Format != "table" || !tg.Instant) {
				t.Errorf("table %q target %s: want an instant query in table format", p.Title, tg.RefID)
			}
			// A bare selector's rows carry __name__, which differs between
			// queries and keeps the merge transformation from joining them.
			if p.Type == "table" && bareSelector.MatchString(tg.Expr) {
				t.Errorf("table %q target %s is a bare selector: wrap it (sum without () (...)) to drop __name__", p.Title, tg.RefID)
			}
		}
	}
}

// TestQueries: every query of every panel and variable parses as PromQL
// (promtool) and names only metrics that jobwatch exports; every variable
// it uses is defined.
func TestQueries(t *testing.T) {
	d := load(t)
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	expanded := map[string]string{}
	allowed := allowedNames(t)
	for _, q := range qs {
		e, unknown := Expand(q.Expr, vars())
		if len(unknown) > 0 {
			t.Errorf("%s uses undefined variables %q", q.Where, unknown)
		}
		expanded[q.Where] = e
		names := promcheck.MetricNames(e)
		if len(names) == 0 {
			t.Errorf("%s selects no metric: %s", q.Where, q.Expr)
		}
		if unknown := promcheck.Unknown(names, allowed); len(unknown) > 0 {
			t.Errorf("%s uses metrics jobwatch does not export: %q", q.Where, unknown)
		}
	}
	if err := promcheck.CheckQueries(t, expanded); err != nil {
		t.Error(err)
	}
}

// TestCoverage: the panels issue 7 asks for are there, each showing the
// metrics it is about.
func TestCoverage(t *testing.T) {
	d := load(t)
	panelMetrics := map[string]map[string]bool{}
	for _, p := range d.AllPanels() {
		m := map[string]bool{}
		for _, tg := range p.Targets {
			e, _ := Expand(tg.Expr, vars())
			for _, n := range promcheck.MetricNames(e) {
				m[n] = true
			}
		}
		panelMetrics[p.Title] = m
	}
	for _, want := range []struct {
		title   string
		metrics []string
	}{
		{"Jobs", []string{"jobwatch_job_seconds_since_last_success", "jobwatch_job_last_duration_seconds", "jobwatch_job_period_seconds",
			"jobwatch_job_running", "jobwatch_job_consecutive_skips", "jobwatch_job_skips_total", "jobwatch_job_consecutive_failures",
			"jobwatch_job_runs_total", "jobwatch_job_stale", "jobwatch_job_missed_runs_total", "jobwatch_job_next_run_timestamp_seconds"}},
		{"Duration against period and timeout", []string{"jobwatch_job_last_duration_seconds", "jobwatch_job_period_seconds", "jobwatch_job_timeout_seconds"}},
		{"Skips by reason, lost locks, overlaps, duplicate, missed and unexpected runs", []string{"jobwatch_job_skips_total", "jobwatch_job_lock_lost_total", "jobwatch_job_overlaps_total",
			"jobwatch_job_duplicate_runs_total", "jobwatch_job_missed_runs_total", "jobwatch_job_unexpected_runs_total"}},
		{"Time since last success against stale deadline", []string{"jobwatch_job_seconds_since_last_success", "jobwatch_job_deadline_timestamp_seconds"}},
		{"Runs in progress now, by host and PID", []string{"jobwatch_job_run_start_timestamp_seconds"}},
		{"Source health", []string{"jobwatch_source_up"}},
		{"Locks", []string{"jobwatch_lock_held", "jobwatch_lock_holder_alive", "jobwatch_lock_held_seconds", "jobwatch_lock_ttl_seconds", "jobwatch_lock_holder_info"}},
	} {
		got, ok := panelMetrics[want.title]
		if !ok {
			t.Errorf("no panel %q", want.title)
			continue
		}
		for _, m := range want.metrics {
			if !got[m] {
				t.Errorf("panel %q does not show %s", want.title, m)
			}
		}
	}
	// The runs-in-progress table shows host and PID columns.
	if !strings.Contains(string(JSON), `"host": "Host"`) || !strings.Contains(string(JSON), `"pid": "PID"`) {
		t.Error("runs in progress table does not name its host and pid columns")
	}
}

func TestExpand(t *testing.T) {
	got, unknown := Expand(`a{x=~"$instance",y="${job_name:regex}"}[$__rate_interval] $nope`, vars())
	if want := `a{x=~".*",y=".*"}[1m] $nope`; got != want {
		t.Errorf("Expand = %q, want %q", got, want)
	}
	if len(unknown) != 1 || unknown[0] != "nope" {
		t.Errorf("unknown = %q, want [nope]", unknown)
	}
}

// allowedNames: the metric names the real exporter describes, with the
// pending contract ones and Prometheus' up.
func allowedNames(t *testing.T) map[string]bool {
	t.Helper()
	a, err := promcheck.Allowed(exporterCollectors(t))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestStaleMatchesAlert: the "Stale jobs" stat and the Jobs table's Stale
// column read a cluster-scope job as JobwatchJobStale does: stale only when
// stale on every instance that reports it. promtool evaluates the queries
// on the series of the alert's own cluster test.
func TestStaleMatchesAlert(t *testing.T) {
	d := load(t)
	var stat, column string
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			switch {
			case p.Title == "Stale jobs" && tg.RefID == "A":
				stat = tg.Expr
			case p.Title == "Jobs" && tg.RefID == "J":
				column = tg.Expr
			}
		}
	}
	if stat == "" || column == "" {
		t.Fatal(`no "Stale jobs" stat query or Jobs table query J`)
	}
	stat, _ = Expand(stat, vars())
	column, _ = Expand(column, vars())
	type sample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	type exprTest struct {
		Expr       string   `yaml:"expr"`
		EvalTime   string   `yaml:"eval_time"`
		ExpSamples []sample `yaml:"exp_samples"`
	}
	rows := func(report float64) []sample {
		return []sample{
			{`{instance="web1:10474",job="jobwatch",job_name="backup"}`, 1},
			{`{instance="web2:10474",job="jobwatch",job_name="backup"}`, 0},
			{`{instance="web1:10474",job="jobwatch",job_name="report"}`, report},
			{`{instance="web2:10474",job="jobwatch",job_name="report"}`, report},
			{`{instance="web3:10474",job="jobwatch",job_name="report"}`, report},
		}
	}
	tests := []exprTest{
		// report is stale on web2 and web3 only: not stale; backup is.
		{stat, "5m", []sample{{`{}`, 1}}},
		{column, "5m", rows(0)},
		// Now stale on web1 too.
		{stat, "15m", []sample{{`{}`, 2}}},
		{column, "15m", rows(1)},
	}
	series := []map[string]string{}
	add := func(name, instance, job, values string) {
		series = append(series, map[string]string{
			"series": fmt.Sprintf(`%s{instance=%q,job="jobwatch",job_name=%q}`, name, instance, job),
			"values": values,
		})
	}
	for _, inst := range []string{"web1:10474", "web2:10474", "web3:10474"} {
		series = append(series, map[string]string{
			"series": fmt.Sprintf(`jobwatch_job_info{instance=%q,job="jobwatch",job_name="report",scope="cluster"}`, inst),
			"values": "1x20",
		})
	}
	add("jobwatch_job_stale", "web1:10474", "report", "0x10 1x10")
	add("jobwatch_job_stale", "web2:10474", "report", "1x20")
	add("jobwatch_job_stale", "web3:10474", "report", "1x20")
	for _, inst := range []string{"web1:10474", "web2:10474"} {
		series = append(series, map[string]string{
			"series": fmt.Sprintf(`jobwatch_job_info{instance=%q,job="jobwatch",job_name="backup",scope="host"}`, inst),
			"values": "1x20",
		})
	}
	add("jobwatch_job_stale", "web1:10474", "backup", "1x20")
	add("jobwatch_job_stale", "web2:10474", "backup", "0x20")
	file := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":         "1m",
			"input_series":     series,
			"promql_expr_test": tests,
		}},
	}
	data, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stale.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := promcheck.Promtool(t)
	if out, err := exec.Command(p, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// grafanaSchemas maps a dashboard schemaVersion to the first Grafana
// release that writes it.
var grafanaSchemas = map[float64]string{36: "9.0.0", 37: "9.4.0", 38: "10.0.0", 39: "10.3.0"}

// TestOperatorLinks: the dashboard links to jobwatch's status page, its URL
// read by a hidden variable from jobwatch_status_page_info's url label; it
// has a scrape job variable; the cluster variable is hidden, as the default
// config has no cluster label; and __requires names the Grafana release of
// its schemaVersion.
func TestOperatorLinks(t *testing.T) {
	var raw struct {
		SchemaVersion float64 `json:"schemaVersion"`
		Requires      []struct{ Type, ID, Version string }
		Links         []struct{ Title, Type, URL string }
		Templating    struct {
			List []struct {
				Name       string
				Hide       int
				Definition string
				Multi      bool
			}
		}
	}
	if err := json.Unmarshal(JSON, &raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range raw.Requires {
		if r.Type == "grafana" && r.Version != grafanaSchemas[raw.SchemaVersion] {
			t.Errorf("__requires names Grafana %s, schemaVersion %v is Grafana %s's", r.Version, raw.SchemaVersion, grafanaSchemas[raw.SchemaVersion])
		}
	}
	vars := map[string]int{}
	for i, v := range raw.Templating.List {
		vars[v.Name] = i
	}
	sp, ok := vars["status_page"]
	if !ok {
		t.Fatal("no status_page variable")
	}
	if v := raw.Templating.List[sp]; v.Hide != 2 || v.Multi || !strings.HasPrefix(v.Definition, "label_values(jobwatch_status_page_info") || !strings.HasSuffix(v.Definition, ", url)") {
		t.Errorf("status_page = %+v, want a hidden single-value variable of jobwatch_status_page_info's url", v)
	}
	linked := false
	for _, l := range raw.Links {
		linked = linked || l.Type == "link" && l.URL == "${status_page}"
	}
	if !linked {
		t.Errorf("no dashboard link to ${status_page}: %+v", raw.Links)
	}
	if i, ok := vars["job"]; !ok || raw.Templating.List[i].Definition != `label_values(jobwatch_job_info{cluster=~"$cluster"}, job)` {
		t.Errorf("no scrape job variable")
	}
	if i := vars["cluster"]; raw.Templating.List[i].Hide != 2 {
		t.Errorf("the cluster variable is shown, but the default config has no cluster label")
	}
	if vars["cluster"] > vars["job"] || vars["job"] > vars["instance"] || vars["instance"] > vars["job_name"] {
		t.Errorf("variables out of order (cluster, job, instance, job_name): %v", vars)
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
