package mixin

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

	"github.com/google/go-jsonnet"
	"go.yaml.in/yaml/v3"

	"jobwatch/dashboards"
	"jobwatch/internal/promcheck"
)

func generate(t *testing.T, config string) *Output {
	t.Helper()
	out, err := Generate(config)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommittedFilesUpToDate: alerts/jobwatch.rules.yml and
// dashboards/jobwatch.json are what the mixin yields with its defaults.
func TestCommittedFilesUpToDate(t *testing.T) {
	names, files := generate(t, "").Files()
	if len(names) < 2 {
		t.Fatalf("the mixin yields %q, want the rules and at least one dashboard", names)
	}
	for _, name := range names {
		committed, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./mixin)", name, err)
			continue
		}
		if !bytes.Equal(committed, files[name]) {
			t.Errorf("%s differs from the mixin's output at %s: run go generate ./mixin", name, firstDiff(committed, files[name]))
		}
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  committed: %q\n  generated: %q", i+1, x, y)
		}
	}
	return "the end"
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func rules(t *testing.T, o *Output) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(o.Rules))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("generated rules: %v", err)
	}
	if len(f.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(f.Groups))
	}
	return f.Groups[0].Rules
}

func dashboardExprs(t *testing.T, o *Output) []string {
	t.Helper()
	var exprs []string
	for name, data := range o.Dashboards {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
						exprs = append(exprs, s)
					}
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
	}
	if len(exprs) == 0 {
		t.Fatal("no dashboard query found")
	}
	return exprs
}

var (
	groupingRE = regexp.MustCompile(`\b(by|on)\s*\(([^()]*)\)`)
	metricRE   = regexp.MustCompile(`\b(jobwatch_[a-z_]+|up)\b(\{|\[|\)| |$)`)
)

// TestClusterLabel: with clusterLabel set, every grouping and matching by
// job_name names the cluster label too, in the rules and the dashboard,
// and two clusters running a job of the same name alert apart.
func TestClusterLabel(t *testing.T) {
	o := generate(t, `{"clusterLabel": "cluster"}`)
	def := generate(t, "")
	grouped := 0
	for _, r := range rules(t, o) {
		for _, m := range groupingRE.FindAllStringSubmatch(r.Expr, -1) {
			labels := strings.Split(strings.ReplaceAll(m[2], " ", ""), ",")
			if strings.Join(labels, ",") == "instance,job,job_name" {
				continue // one target's series: the cluster is implied
			}
			if !contains(labels, "job_name") {
				continue
			}
			grouped++
			if !contains(labels, "cluster") {
				t.Errorf("%s: %s(%s) does not name the cluster label", r.Alert, m[1], m[2])
			}
		}
		if strings.Contains(r.Annotations["description"], "$sel := printf") && !strings.Contains(r.Annotations["description"], "$labels.cluster") {
			t.Errorf("%s: the description's queries do not select the alert's cluster", r.Alert)
		}
	}
	if grouped < 8 {
		t.Errorf("found %d groupings by job_name, want the 8 or more of the stale, overlap, skip and failure alerts", grouped)
	}
	for _, r := range rules(t, def) {
		if strings.Contains(r.Expr, "(cluster") {
			t.Errorf("%s: the default rules group by a cluster label; by default there is none", r.Alert)
		}
	}
	for _, e := range dashboardExprs(t, o) {
		for _, m := range groupingRE.FindAllStringSubmatch(e, -1) {
			if strings.Contains(m[2], "job_name") && !strings.Contains(m[2], "cluster") {
				t.Errorf("dashboard query groups %s(%s) without the cluster label: %s", m[1], m[2], e)
			}
		}
	}
	dir := writeRules(t, o)
	promtool(t, "check", "rules", filepath.Join(dir, "jobwatch.rules.yml"))
	writeFile(t, filepath.Join(dir, "tests", "clusters.yml"), clusterTest)
	promtool(t, "test", "rules", filepath.Join(dir, "tests", "clusters.yml"))
	// The default rules see one cluster: report is fresh on b, so not
	// stale anywhere. This is what clusterLabel changes.
	dir = writeRules(t, def)
	quiet, _, _ := strings.Cut(clusterTest, "exp_alerts:")
	writeFile(t, filepath.Join(dir, "tests", "clusters.yml"), quiet+"exp_alerts: []\n")
	promtool(t, "test", "rules", filepath.Join(dir, "tests", "clusters.yml"))
}

// clusterTest: the cluster job report is stale on both hosts of cluster
// a and fresh in cluster b: one alert, for a.
const clusterTest = `rule_files: [../jobwatch.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'jobwatch_job_info{cluster="a",instance="a1:10474",job="jobwatch",job_name="report",scope="cluster"}'
        values: '1x10'
      - series: 'jobwatch_job_info{cluster="a",instance="a2:10474",job="jobwatch",job_name="report",scope="cluster"}'
        values: '1x10'
      - series: 'jobwatch_job_info{cluster="b",instance="b1:10474",job="jobwatch",job_name="report",scope="cluster"}'
        values: '1x10'
      - series: 'jobwatch_job_stale{cluster="a",instance="a1:10474",job="jobwatch",job_name="report"}'
        values: '1x10'
      - series: 'jobwatch_job_stale{cluster="a",instance="a2:10474",job="jobwatch",job_name="report"}'
        values: '1x10'
      - series: 'jobwatch_job_stale{cluster="b",instance="b1:10474",job="jobwatch",job_name="report"}'
        values: '0x10'
      - series: 'jobwatch_job_seconds_since_last_success{cluster="a",instance="a1:10474",job="jobwatch",job_name="report"}'
        values: '2000+60x10'
      - series: 'jobwatch_job_seconds_since_last_success{cluster="a",instance="a2:10474",job="jobwatch",job_name="report"}'
        values: '3000+60x10'
      - series: 'jobwatch_job_seconds_since_last_success{cluster="b",instance="b1:10474",job="jobwatch",job_name="report"}'
        values: '60x10'
      - series: 'jobwatch_job_period_seconds{cluster="a",instance="a1:10474",job="jobwatch",job_name="report"}'
        values: '900x10'
      - series: 'jobwatch_job_period_seconds{cluster="b",instance="b1:10474",job="jobwatch",job_name="report"}'
        values: '60x10'
      - series: 'jobwatch_job_stale_multiple{cluster="a",instance="a1:10474",job="jobwatch",job_name="report"}'
        values: '2x10'
      - series: 'jobwatch_job_stale_multiple{cluster="b",instance="b1:10474",job="jobwatch",job_name="report"}'
        values: '5x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: JobwatchJobStale
        exp_alerts:
          - exp_labels: {severity: critical, cluster: a, job_name: report}
            exp_annotations:
              summary: Cluster job report is stale on every host
              description: 'Job report has not succeeded on any host for 38m 20s: more than 2 periods of 15m 0s.'
              runbook_url: alerts/runbook.md#jobwatchjobstale
`

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestConfigsPassUnitTests: the rules generated with a jobwatch selector
// and a cluster label still pass every promtool unit test of alerts/tests
// (whose series carry job="jobwatch" and no cluster label), and every
// jobwatch series the rules and the dashboard select carries the selector.
func TestConfigsPassUnitTests(t *testing.T) {
	tests, err := filepath.Glob("../alerts/tests/*.yml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no unit tests in alerts/tests: %v", err)
	}
	for _, tc := range []struct{ name, config, selector string }{
		{"selector", `{"jobwatchSelector": "job=\"jobwatch\""}`, `job="jobwatch"`},
		{"selector and cluster", `{"jobwatchSelector": "job=~\"jobwatch|jw\"", "clusterLabel": "cluster"}`, `job=~"jobwatch|jw"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := generate(t, tc.config)
			var exprs []string
			for _, r := range rules(t, o) {
				exprs = append(exprs, r.Expr)
			}
			exprs = append(exprs, dashboardExprs(t, o)...)
			for _, e := range exprs {
				for _, loc := range metricRE.FindAllStringSubmatchIndex(e, -1) {
					name, rest := e[loc[2]:loc[3]], e[loc[3]:]
					if name == "up" && !strings.HasPrefix(rest, "{") {
						continue // the word, in a comment or label
					}
					if !strings.HasPrefix(rest, "{"+tc.selector) {
						t.Errorf("%s is not selected by %s in %s", name, tc.selector, e)
					}
				}
			}
			checkDashboardQueries(t, o)
			dir := writeRules(t, o)
			args := []string{"test", "rules"}
			for _, f := range tests {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(dir, "tests", filepath.Base(f))
				writeFile(t, dst, string(data))
				args = append(args, dst)
			}
			promtool(t, args...)
		})
	}
}

// TestRunbookURLPrefix: every runbook_url is the prefix and the alert's
// name in lower case.
func TestRunbookURLPrefix(t *testing.T) {
	const prefix = "https://wiki.example.org/jobwatch/runbook#"
	for _, r := range rules(t, generate(t, `{"runbookURLPrefix": "`+prefix+`"}`)) {
		if want := prefix + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
	}
}

// TestBadConfig: a config that is not a JSON object, or a mixin error, is
// an error, not a file.
func TestBadConfig(t *testing.T) {
	for _, c := range []string{`nonsense`, `{"clusterLabel": 3}`} {
		if _, err := Generate(c); err == nil {
			t.Errorf("Generate(%s): no error", c)
		}
	}
}

func writeRules(t *testing.T, o *Output) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "jobwatch.rules.yml"), string(o.Rules))
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	p, err := promcheck.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(p, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestPlainJsonnet: the mixin evaluates from disk with jsonnet's own file
// importer, as jsonnet, jb and mixtool users load it, to what the
// generator renders, and has only the fields mixins have.
func TestPlainJsonnet(t *testing.T) {
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{})
	out, err := vm.EvaluateAnonymousSnippet("plain.jsonnet", `
local m = import 'mixin.libsonnet';
{ fields: std.objectFieldsAll(m), rules: m.prometheusAlerts, dashboards: m.grafanaDashboards }`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Fields     []string                   `json:"fields"`
		Rules      json.RawMessage            `json:"rules"`
		Dashboards map[string]json.RawMessage `json:"dashboards"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if want := "_config grafanaDashboards prometheusAlerts"; strings.Join(got.Fields, " ") != want {
		t.Errorf("mixin fields %q, want %s", got.Fields, want)
	}
	rendered, err := RulesYAML(got.Rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	gen := generate(t, "")
	if len(got.Dashboards) != len(gen.Dashboards) {
		t.Fatalf("%d dashboards evaluated from disk, %d generated", len(got.Dashboards), len(gen.Dashboards))
	}
	var a, b any
	if err := yaml.Unmarshal(rendered, &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(gen.Rules, &b); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("rules evaluated from disk differ from the generated ones")
	}
	for name, raw := range got.Dashboards {
		var x, y any
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(gen.Dashboards[name], &y); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Errorf("dashboard %s evaluated from disk differs from the generated one", name)
		}
	}
}

// TestConfigDocumented: docs/alerts.md names every _config field.
func TestConfigDocumented(t *testing.T) {
	vm := jsonnet.MakeVM()
	vm.Importer(&fsImporter{fsys: Sources})
	out, err := vm.EvaluateAnonymousSnippet("fields.jsonnet", `std.objectFieldsAll((import 'config.libsonnet')._config)`)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if !bytes.Contains(doc, []byte("`"+f+"`")) {
			t.Errorf("docs/alerts.md does not document _config.%s", f)
		}
	}
	if len(fields) < 4 {
		t.Errorf("_config has fields %q", fields)
	}
}

// checkDashboardQueries has promtool parse every query of the dashboards,
// their variables filled as the dashboards package's tests fill them.
func checkDashboardQueries(t *testing.T, o *Output) {
	t.Helper()
	vals := map[string]string{"cluster": ".*", "instance": ".*", "job_name": ".*"}
	for k, v := range dashboards.Builtin {
		vals[k] = v
	}
	queries := map[string]string{}
	for name, data := range o.Dashboards {
		d, err := dashboards.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := d.Queries()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			e, unknown := dashboards.Expand(q.Expr, vals)
			if len(unknown) > 0 {
				t.Errorf("%s %s uses undefined variables %q", name, q.Where, unknown)
			}
			queries[name+" "+q.Where] = e
		}
	}
	if err := promcheck.CheckQueries(t.TempDir(), queries); err != nil {
		t.Error(err)
	}
}
