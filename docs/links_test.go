// Package docs holds jobwatch's documentation pages; its tests keep their
// links, the metrics reference and development.md's layout table true.
package docs

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pending are pages that other pages link to and that are written on
// another branch; until one exists, a link to it is not an error. Once it
// exists, its links and anchors are checked like any other page.
var pending = map[string]bool{
	"docs/state.md": true,
}

// pages are the Markdown files whose links are checked, relative to the
// repository root.
func pages(t *testing.T) []string {
	t.Helper()
	ps := []string{"README.md", "BENCHMARKS.md", "alerts/runbook.md"}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		ps = append(ps, "docs/"+d)
	}
	return ps
}

var (
	// inline links and images: [text](target) or [text](target "title").
	linkRE    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineRE  = regexp.MustCompile("`[^`]*`")
	// a link inside a heading: its anchor is made from the link's text.
	linkTextRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// stripCode removes fenced code blocks and inline code, where text that
// looks like a link or a heading is not one.
func stripCode(doc string) []string {
	var lines []string
	fence := ""
	for _, l := range strings.Split(doc, "\n") {
		trim := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			lines = append(lines, "")
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			lines = append(lines, "")
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped (but - and _), spaces made dashes.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the anchors of a page's headings, numbered as GitHub
// numbers repeated ones (x, x-1, x-2, ...).
func anchors(doc string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	for _, l := range stripCode(doc) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		text := strings.ReplaceAll(m[2], "`", "")
		text = linkTextRE.ReplaceAllString(text, "$1")
		s := slug(text)
		if n := seen[s]; n > 0 {
			a[s+"-"+strconv.Itoa(n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	return a
}

// TestSlug pins the anchors the link check relies on to GitHub's.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Quick start", "quick-start"},
		{"Run logs (type: runlog): the record format", "run-logs-type-runlog-the-record-format"},
		{"job_runs tables (type: mysql)", "job_runs-tables-type-mysql"},
		{"jobwatch run: lock, timeout and run record for any command", "jobwatch-run-lock-timeout-and-run-record-for-any-command"},
		{"Daylight saving time (OnCalendar)", "daylight-saving-time-oncalendar"},
		{"Alerts, dashboard, Prometheus and Alertmanager", "alerts-dashboard-prometheus-and-alertmanager"},
		{"JobwatchJobStale", "jobwatchjobstale"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := slug(tc.in); got != tc.want {
				t.Errorf("slug(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	doc := "# A\n## A\n```\n# not a heading\n```\n## A\n"
	got := anchors(doc)
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("anchors of %q lack %q: %v", doc, want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("anchors of %q = %v, want 3 (the code block holds none)", doc, got)
	}
}

// TestLinks: every relative link in the README and the docs names a file
// of the repository, and an anchor of it when it has one.
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		return string(b), err
	}
	checked := 0
	for _, page := range pages(t) {
		doc, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range stripCode(doc) {
			l = inlineRE.ReplaceAllString(l, "")
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				u, err := url.Parse(target)
				if err != nil {
					t.Errorf("%s:%d: link %q: %v", page, n+1, target, err)
					continue
				}
				if u.Scheme != "" || u.Host != "" {
					continue // an outside address
				}
				file := page
				if u.Path != "" {
					file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), u.Path)))
				}
				if strings.HasPrefix(file, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", page, n+1, target)
					continue
				}
				checked++
				st, err := os.Stat(filepath.Join(root, filepath.FromSlash(file)))
				if err != nil {
					if os.IsNotExist(err) && pending[file] && u.Fragment == "" {
						continue
					}
					t.Errorf("%s:%d: link %q: %s does not exist", page, n+1, target, file)
					continue
				}
				if u.Fragment == "" {
					continue
				}
				if st.IsDir() || !strings.HasSuffix(file, ".md") {
					t.Errorf("%s:%d: link %q: an anchor into %s, which is not a Markdown page", page, n+1, target, file)
					continue
				}
				linked, err := read(file)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(linked)[u.Fragment] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, n+1, target, file, u.Fragment)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d relative links, want at least 50: is the link pattern still finding them?", checked)
	}
}

// TestEveryPageLinked: every page of docs/ is reachable from the README.
func TestEveryPageLinked(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, m := range linkRE.FindAllStringSubmatch(string(readme), -1) {
		linked = append(linked, strings.SplitN(m[1], "#", 2)[0])
	}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !slices.Contains(linked, "docs/"+d) {
			t.Errorf("docs/%s is not linked from README.md", d)
		}
	}
}

// docsPathRE is a docs page named in code or config: docs/schedules.md.
var docsPathRE = regexp.MustCompile(`\bdocs/[A-Za-z0-9_.-]+\.md\b`)

// TestDocsNamedInCode: every docs page a source file, script or config of
// the repository names (a Go comment saying "see docs/schedules.md")
// exists.
func TestDocsNamedInCode(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	exts := map[string]bool{".go": true, ".sql": true, ".yml": true, ".yaml": true, ".sh": true, ".jsonnet": true, ".libsonnet": true, ".md": true}
	named := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(path)] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		text := string(b)
		for _, loc := range docsPathRE.FindAllStringIndex(text, -1) {
			p := text[loc[0]:loc[1]]
			if loc[0] > 0 && text[loc[0]-1] == '/' {
				continue // another project's docs/, inside a URL
			}
			named++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil && !pending[p] {
				t.Errorf("%s names %s, which does not exist", filepath.ToSlash(rel), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if named == 0 {
		t.Error("no file names a docs page: is the pattern still finding them?")
	}
}
