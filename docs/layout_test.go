package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layoutRow is one row of the repository layout table of
// docs/development.md: the paths its first cell names and its second cell.
type layoutRow struct {
	paths []string
	what  string
}

// layoutTable reads the rows of the table under "## Repository layout".
func layoutTable(t *testing.T) []layoutRow {
	t.Helper()
	doc, err := os.ReadFile("development.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []layoutRow
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "## ") {
			in = l == "## Repository layout"
			continue
		}
		cells := strings.Split(l, " | ")
		if !in || !strings.HasPrefix(l, "| `") || len(cells) < 2 {
			continue
		}
		var r layoutRow
		for _, code := range inlineRE.FindAllString(cells[0], -1) {
			r.paths = append(r.paths, strings.Trim(code, "`"))
		}
		r.what = strings.Join(cells[1:], " | ")
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("found only %d rows in the layout table of docs/development.md", len(rows))
	}
	return rows
}

// packageDirs returns the directories under the repository root that hold
// Go files, relative to it, as the go command sees packages: testdata and
// directories whose name starts with . or _ are left out.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != ".." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel("..", filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestLayoutTable: the layout table of docs/development.md names every
// top-level directory that holds a package, and the row of internal/ (or
// of a directory under it with a row of its own, internal/testsupport/)
// every package under it; every path it names exists.
func TestLayoutTable(t *testing.T) {
	rows := layoutTable(t)
	names := func(dir string) bool {
		for _, r := range rows {
			for _, p := range r.paths {
				if p == dir+"/" || strings.HasPrefix(p, dir+"/") {
					return true
				}
			}
		}
		return false
	}
	var internalRow *layoutRow
	for i, r := range rows {
		if slices.Contains(r.paths, "internal/") {
			internalRow = &rows[i]
		}
	}
	if internalRow == nil {
		t.Fatal("the layout table has no internal/ row")
	}
	dirs := packageDirs(t)
	if !slices.Contains(dirs, "internal/layering") {
		t.Fatalf("package directories %v lack internal/layering", dirs)
	}
	missing := map[string]bool{}
	for _, d := range dirs {
		top, _, _ := strings.Cut(d, "/")
		if top != "." && !names(top) && !missing[top] {
			missing[top] = true
			t.Errorf("docs/development.md: the layout table does not name %s/", top)
		}
		if !strings.HasPrefix(d, "internal/") || names(d) {
			continue
		}
		// The row of its nearest directory (internal/, internal/testsupport/)
		// names it relative to that directory.
		row, dir := internalRow, "internal/"
		for i, r := range rows {
			for _, p := range r.paths {
				if strings.HasSuffix(p, "/") && strings.HasPrefix(d+"/", p) && len(p) > len(dir) {
					row, dir = &rows[i], p
				}
			}
		}
		if rel := strings.TrimPrefix(d, dir); !strings.Contains(row.what, "`"+rel+"`") {
			t.Errorf("docs/development.md: the layout table's %s row does not name `%s`", dir, rel)
		}
	}
	for _, r := range rows {
		for _, p := range r.paths {
			if strings.Contains(p, "<") {
				continue // a pattern such as sources/<type>/
			}
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("docs/development.md: the layout table names %s, which does not exist", p)
			}
		}
	}
}
