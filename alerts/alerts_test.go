package alerts

import (
	"bytes"
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

type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         *string           `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// required is the alert set of issue 7, with each alert's severity.
var required = map[string]string{
	"JobwatchJobStale":              "critical",
	"JobwatchJobOverlapping":        "warning",
	"JobwatchJobSkippingRepeatedly": "warning",
	"JobwatchJobFailing":            "warning",
	"JobwatchJobRunningTooLong":     "warning",
	"JobwatchJobDuplicateRuns":      "warning",
	"JobwatchSourceDown":            "critical",
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(Rules))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("jobwatch.rules.yml: %v", err)
	}
	if len(f.Groups) != 1 || f.Groups[0].Name != "jobwatch" {
		t.Fatalf("want exactly one group named jobwatch, got %d groups", len(f.Groups))
	}
	if f.Groups[0].Interval != "" {
		t.Errorf("group jobwatch sets interval %s: leave it to Prometheus' evaluation_interval", f.Groups[0].Interval)
	}
	return f.Groups[0].Rules
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	p := promcheck.Promtool(t)
	out, err := exec.Command(p, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRulesLoad: Prometheus' own checker accepts the file.
func TestRulesLoad(t *testing.T) {
	promtool(t, "check", "rules", "jobwatch.rules.yml")
}

// TestRulesUnit runs the promtool unit tests in tests/.
func TestRulesUnit(t *testing.T) {
	files, err := filepath.Glob("tests/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no unit tests in tests/: %v", err)
	}
	promtool(t, append([]string{"test", "rules"}, files...)...)
}

// TestRulesContract: every required alert exists with its severity, and
// every alert has a for:, a severity, a summary and description that name
// what it is about, and a runbook_url to its own section of runbook.md.
func TestRulesContract(t *testing.T) {
	rules := loadRules(t)
	allowed := allowedNames(t)
	header := string(Rules[:bytes.Index(Rules, []byte("\ngroups:"))])
	runbook := string(Runbook)
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		t.Run(r.Alert, func(t *testing.T) {
			if seen[r.Alert] {
				t.Errorf("alert defined twice")
			}
			seen[r.Alert] = true
			sev := r.Labels["severity"]
			if sev != "critical" && sev != "warning" {
				t.Errorf("severity %q, want critical or warning", sev)
			}
			if want, ok := required[r.Alert]; ok && sev != want {
				t.Errorf("severity %q, want %q", sev, want)
			}
			if r.For == nil {
				t.Errorf("no for: (write for: 0m to fire at once)")
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("annotation %s missing", a)
				}
			}
			if strings.Contains(r.Expr, "jobwatch_job_") {
				for _, a := range []string{"summary", "description"} {
					if !strings.Contains(r.Annotations[a], "$labels.job_name") {
						t.Errorf("%s does not name the job ($labels.job_name)", a)
					}
				}
			}
			// JobwatchAbsent is about there being no target: no instance.
			if !strings.Contains(r.Annotations["description"], "$labels.instance") && r.Alert != "JobwatchAbsent" {
				t.Errorf("description does not name the host ($labels.instance)")
			}
			if want := "https://github.com/jobwatch/jobwatch/blob/main/alerts/runbook.md#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("runbook_url %q, want %q", r.Annotations["runbook_url"], want)
			}
			section := runbookSection(runbook, r.Alert)
			if section == "" {
				t.Fatalf("runbook.md has no section ## %s", r.Alert)
			}
			for _, part := range []string{"**Means.**", "**Confirm.**", "**Fix.**"} {
				if !strings.Contains(section, part) {
					t.Errorf("runbook section lacks %s", part)
				}
			}
			if !strings.Contains(header, r.Alert) {
				t.Errorf("thresholds of %s are not documented at the top of the file", r.Alert)
			}
			if unknown := promcheck.Unknown(promcheck.MetricNames(r.Expr), allowed); len(unknown) > 0 {
				t.Errorf("expr uses metrics jobwatch does not export: %q", unknown)
			}
		})
	}
	for a := range required {
		if !seen[a] {
			t.Errorf("required alert %s missing", a)
		}
	}
}

var (
	// byInstance: an aggregation by the target's labels, which drops the
	// others (env, cluster, ...): group without() the labels dropped.
	byInstance = regexp.MustCompile(`\bby\s*\(([^)]*\binstance\b[^)]*)\)`)
	// oneToOneOn: arithmetic or a comparison matched on() labels of one
	// target without group_left/right: its result keeps only those labels.
	oneToOneOn = regexp.MustCompile(`(?:[-+*/<>=]|\bbool)\s*on\s*\(([^)]*\binstance\b[^)]*)\)(\s*group_(?:left|right))?`)
)

// TestRulesKeepTargetLabels: no rule drops the labels a scrape config adds
// to its targets (env, cluster, ...) by naming the ones it keeps, so an
// alert that fires through two parts of its rule is one alert. The
// promtool tests with env="prod" show it for the rules that once did.
func TestRulesKeepTargetLabels(t *testing.T) {
	for _, r := range loadRules(t) {
		for _, m := range byInstance.FindAllStringSubmatch(r.Expr, -1) {
			t.Errorf("%s: by (%s) drops every other label of the target: aggregate without (...)", r.Alert, m[1])
		}
		for _, m := range oneToOneOn.FindAllStringSubmatch(r.Expr, -1) {
			if m[2] == "" {
				t.Errorf("%s: %s keeps only the labels it names: match without on(), with ignoring(...), or add group_left", r.Alert, strings.TrimSpace(m[0]))
			}
		}
	}
}

var (
	queryInTemplate = regexp.MustCompile(`printf "((?:[^"\\]|\\.)*)"[^|}]*\| query`)
	// printf verbs, with or without an argument index (%[2]q).
	printfQ = regexp.MustCompile(`%(\[[0-9]+\])?q`)
	printfS = regexp.MustCompile(`%(\[[0-9]+\])?s`)
)

// TestAnnotationQueries: the queries annotations run name only exported
// metrics, and parse once their placeholders are filled.
func TestAnnotationQueries(t *testing.T) {
	queries := map[string]string{}
	allowed := allowedNames(t)
	for _, r := range loadRules(t) {
		for name, text := range r.Annotations {
			for i, m := range queryInTemplate.FindAllStringSubmatch(text, -1) {
				q := strings.ReplaceAll(m[1], `\"`, `"`)
				q = printfQ.ReplaceAllString(q, `"x"`)
				q = printfS.ReplaceAllString(q, `job_name="x"`)
				queries[r.Alert+" "+name+" "+string(rune('0'+i))] = q
				if unknown := promcheck.Unknown(promcheck.MetricNames(q), allowed); len(unknown) > 0 {
					t.Errorf("%s %s queries metrics jobwatch does not export: %q", r.Alert, name, unknown)
				}
			}
		}
	}
	if len(queries) == 0 {
		t.Fatal("found no query in any annotation")
	}
	if err := promcheck.CheckQueries(t, queries); err != nil {
		t.Error(err)
	}
}

func runbookSection(runbook, alert string) string {
	i := strings.Index(runbook, "\n## "+alert+"\n")
	if i < 0 {
		return ""
	}
	s := runbook[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

type unitFile struct {
	Tests []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertTested: each alert has a unit test where it fires and one
// where it must not.
func TestEveryAlertTested(t *testing.T) {
	files, _ := filepath.Glob("tests/*.yml")
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var u unitFile
		if err := yaml.Unmarshal(data, &u); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range u.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		if !fires[r.Alert] {
			t.Errorf("%s: no unit test where it fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s: no unit test where it must not fire", r.Alert)
		}
	}
}

// allowedNames: the metric names the real exporter describes, and
// Prometheus' up.
func allowedNames(t *testing.T) map[string]bool {
	t.Helper()
	a, err := promcheck.Allowed(exporterCollectors(t))
	if err != nil {
		t.Fatal(err)
	}
	return a
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
