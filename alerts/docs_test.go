package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDocsExamples: the Prometheus and Alertmanager configs in
// docs/alerts.md are valid, and the Prometheus one loads these rules.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs("jobwatch.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range yamlBlock.FindAllStringSubmatch(string(doc), -1) {
		block := m[1]
		var tool string
		var args []string
		switch {
		case strings.HasPrefix(block, "# prometheus.yml"):
			tool, args = "promtool", []string{"check", "config"}
			block = strings.ReplaceAll(block, "/etc/prometheus/rules/jobwatch.rules.yml", rules)
		case strings.HasPrefix(block, "# alertmanager.yml"):
			tool, args = "amtool", []string{"check-config"}
			block = strings.NewReplacer("routing_key: <secret>", "routing_key: x", "api_url: <secret>", "api_url: https://hooks.invalid/x").Replace(block)
		default:
			continue
		}
		path := testproc.Program(t, tool, map[string]string{"promtool": "prometheus", "amtool": "prometheus-alertmanager"}[tool])
		f := filepath.Join(t.TempDir(), "config.yml")
		if err := os.WriteFile(f, []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(path, append(args, f)...).CombinedOutput(); err != nil {
			t.Errorf("%s %s on the docs/alerts.md example: %v\n%s\n%s", tool, strings.Join(args, " "), err, out, block)
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("checked %d example configs, want 2 (prometheus.yml and alertmanager.yml)", checked)
	}
}

// TestDocsListEveryAlert: the alert table of docs/alerts.md has a row for
// every alert of the rules, and none for an alert that does not exist.
func TestDocsListEveryAlert(t *testing.T) {
	doc, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	defined := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		defined[r.Alert] = true
		if !listed[r.Alert] {
			t.Errorf("docs/alerts.md has no row | %s | in its table of alerts", r.Alert)
		}
	}
	for a := range listed {
		if !defined[a] {
			t.Errorf("docs/alerts.md lists %s, which the rules do not define", a)
		}
	}
}

var tableRow = regexp.MustCompile(`(?m)^\| (Jobwatch[A-Za-z]+) \|`)
