package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// maxBenchmarksLines bounds BENCHMARKS.md: a user reads its first table
// for the figure they want; the dated passes belong in
// docs/benchmarks-history.md.
const maxBenchmarksLines = 300

var (
	benchmarksHeader = "| figure | jobwatch | baseline (same run) | ratio | machine (load) | date | command |"
	isoDateRE        = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// TestBenchmarksTable: BENCHMARKS.md is short, and its first table gives
// every figure with its baseline, ratio, machine, date and command.
func TestBenchmarksTable(t *testing.T) {
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxBenchmarksLines {
		t.Errorf("BENCHMARKS.md has %d lines, more than %d: move dated passes to docs/benchmarks-history.md", len(lines), maxBenchmarksLines)
	}
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "| ") {
			start = i
			break
		}
	}
	if start < 0 || lines[start] != benchmarksHeader {
		t.Fatalf("BENCHMARKS.md's first table must start with\n%s", benchmarksHeader)
	}
	rows := 0
	for n, l := range lines[start+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows++
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		if len(cells) != 7 {
			t.Errorf("BENCHMARKS.md:%d: %d cells, want 7 (write — for none): %s", start+3+n, len(cells), l)
			continue
		}
		for i, c := range cells {
			if strings.TrimSpace(c) == "" {
				t.Errorf("BENCHMARKS.md:%d: cell %d is empty (write — for none)", start+3+n, i+1)
			}
		}
		if date := strings.TrimSpace(cells[5]); !isoDateRE.MatchString(date) {
			t.Errorf("BENCHMARKS.md:%d: date %q, want YYYY-MM-DD", start+3+n, date)
		}
		if cmd := strings.TrimSpace(cells[6]); !strings.Contains(cmd, "`") && cmd != "the same" {
			t.Errorf("BENCHMARKS.md:%d: the command cell names no command (or \"the same\", the row above's)", start+3+n)
		}
	}
	if rows < 10 {
		t.Errorf("BENCHMARKS.md's first table has %d rows: is the table still found?", rows)
	}
}
