// Package promcheck helps the tests of jobwatch's bundled rules and
// dashboards: it finds promtool, checks PromQL through it, and lists the
// metric names a query uses, so that every query can be held against the
// metrics jobwatch really exports.
package promcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// Promtool returns the path of promtool. It skips the test under go test
// -short and fails it, naming the Debian package, when promtool is missing.
func Promtool(t testing.TB) string {
	t.Helper()
	return testproc.Program(t, "promtool", "prometheus")
}

// CheckQueries has promtool parse every query: it writes them as recording
// rules of one rule file in a temporary directory and runs `promtool check
// rules` on it. The error names the queries promtool rejected, with its
// output. Promtool's rules apply: the test is skipped under -short.
func CheckQueries(t testing.TB, queries map[string]string) error {
	t.Helper()
	promtool := Promtool(t)
	dir := t.TempDir()
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Strings(names)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	type group struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}
	g := group{Name: "queries"}
	for i := range names {
		g.Rules = append(g.Rules, rule{Record: fmt.Sprintf("query_%d", i), Expr: queries[names[i]]})
	}
	data, err := yaml.Marshal(map[string][]group{"groups": {g}})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "queries.rules.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		// promtool names the failing rule by its index: map it back.
		msg := string(out)
		for i := len(names) - 1; i >= 0; i-- {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("%q", fmt.Sprintf("query_%d", i)), fmt.Sprintf("%q", names[i]))
		}
		return fmt.Errorf("promtool check rules: %w\n%s", err, msg)
	}
	return nil
}

var (
	stringRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matcherRE  = regexp.MustCompile(`\{[^{}]*\}`)
	rangeRE    = regexp.MustCompile(`\[[^\[\]]*\]`)
	groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identRE    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords   = map[string]bool{
		"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
		"ignoring": true, "group_left": true, "group_right": true, "offset": true, "bool": true,
		"inf": true, "nan": true, "atan2": true, "start": true, "end": true,
	}
)

// MetricNames lists the metric names a PromQL expression selects, sorted.
// It strips strings, label matchers, ranges, grouping clauses and numbers,
// then takes every remaining identifier that is not a function call or a
// keyword. It is a lexical check, made to catch a misspelt or unexported
// metric, and relies on promtool for the grammar.
func MetricNames(expr string) []string {
	s := stringRE.ReplaceAllString(expr, `""`)
	for {
		t := matcherRE.ReplaceAllString(s, " ")
		t = rangeRE.ReplaceAllString(t, " ")
		t = groupingRE.ReplaceAllString(t, " ")
		if t == s {
			break
		}
		s = t
	}
	seen := map[string]bool{}
	for _, loc := range identRE.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && isNumberPart(s[loc[0]-1]) {
			continue // 1e3, 5m, 0x1f
		}
		if keywords[strings.ToLower(name)] {
			continue
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") {
			continue // a function call
		}
		seen[name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func isNumberPart(c byte) bool { return c >= '0' && c <= '9' || c == '.' }

// Unknown returns the names in used that exported does not hold. A
// histogram's _bucket, _sum and _count count as exported when its base name
// is.
func Unknown(used []string, exported map[string]bool) []string {
	var out []string
	for _, n := range used {
		if exported[n] {
			continue
		}
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok {
				base = b
				break
			}
		}
		if base != n && exported[base] {
			continue
		}
		out = append(out, n)
	}
	return out
}
