package discover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsExample keeps the worked example of docs/discover.md in step
// with the example fixture and its golden output.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "discover.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	files := []string{"etc/cron.d/backup", "etc/cron.d/db", "var/spool/cron/crontabs/web",
		"etc/systemd/system/db-dump.timer", "etc/systemd/system/db-dump.service",
		"etc/systemd/system/metrics-push.timer", "etc/systemd/system/metrics-push.service"}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "example", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "`/"+f+"`\n```\n"+string(data)+"```\n") {
			t.Errorf("docs/discover.md does not show /%s as in testdata/example", f)
		}
	}
	for _, g := range []string{"example.yml", "example.findings"} {
		data, err := os.ReadFile(filepath.Join("testdata", "golden", g))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(string(data), "under testdata/example.", "under /.", 1)
		if !strings.Contains(text, "\n"+want+"```\n") {
			t.Errorf("docs/discover.md does not show testdata/golden/%s as it is", g)
		}
	}
	for _, k := range Kinds {
		if !strings.Contains(text, "`"+k+"`") {
			t.Errorf("docs/discover.md does not describe kind %s", k)
		}
	}
}
