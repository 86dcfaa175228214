// Package layering holds the proof that jobwatch's packages keep to their
// layers, which any reader can rerun with `go test ./internal/layering`:
// no source package imports Prometheus (sources turn records into events;
// they know nothing of metrics), and the collector neither queries a
// database nor touches files (it renders the model; reading and writing
// belong to the sources and the saver); schedule imports no other package
// of jobwatch (config calls it), discover does not import wrapper, and no
// layer above sources/ imports a source package (only sources/all does);
// test rigs are imported only by tests, only cmd/ imports the exporter, and
// the binary links no test rig.
package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goList runs go list with args and returns its output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

func TestSourcesImportNoPrometheus(t *testing.T) {
	pkgs := goList(t, "github.com/jobwatch/jobwatch/sources/...")
	if len(pkgs) < 4 {
		t.Fatalf("found only the source packages %v", pkgs)
	}
	for _, pkg := range pkgs {
		t.Run(pkg, func(t *testing.T) {
			deps := goList(t, "-deps", pkg)
			for _, d := range deps {
				if strings.HasPrefix(d, "github.com/prometheus/") {
					t.Errorf("%s imports %s (see go list -deps %s)", pkg, d, pkg)
				}
			}
		})
	}
}

func TestCollectorImportsNoDatabase(t *testing.T) {
	for _, d := range goList(t, "-deps", "github.com/jobwatch/jobwatch/collector") {
		if d == "database/sql" || strings.HasPrefix(d, "database/sql/") || strings.HasPrefix(d, "github.com/go-sql-driver/") {
			t.Errorf("collector imports %s", d)
		}
	}
}

// fileFuncs are the functions of package os that touch the file system.
var fileFuncs = map[string]bool{
	"Open": true, "OpenFile": true, "OpenInRoot": true, "OpenRoot": true, "Create": true, "CreateTemp": true,
	"ReadFile": true, "WriteFile": true, "ReadDir": true, "ReadLink": true, "Readlink": true,
	"Stat": true, "Lstat": true, "Remove": true, "RemoveAll": true, "Rename": true, "Mkdir": true,
	"MkdirAll": true, "MkdirTemp": true, "Chmod": true, "Chown": true, "Lchown": true, "Chtimes": true,
	"Truncate": true, "Link": true, "Symlink": true, "DirFS": true, "CopyFS": true, "NewFile": true,
}

// The collector's own code (tests aside) calls no file function of os and
// imports no package whose business is files.
func TestCollectorTouchesNoFiles(t *testing.T) {
	dir := goList(t, "-f", "{{.Dir}}", "github.com/jobwatch/jobwatch/collector")[0]
	files := goList(t, "-f", `{{join .GoFiles " "}}`, "github.com/jobwatch/jobwatch/collector")
	if len(files) == 0 {
		t.Fatal("no files in collector")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		osName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch path {
			case "io/ioutil", "io/fs", "path/filepath", "database/sql", "os/exec":
				t.Errorf("%s imports %s", name, path)
			case "os":
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && fileFuncs[sel.Sel.Name] {
				t.Errorf("%s: collector calls os.%s", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// importsOf returns the jobwatch packages pkg depends on, itself left out.
func importsOf(t *testing.T, pkg string) []string {
	t.Helper()
	var out []string
	for _, d := range goList(t, "-deps", pkg) {
		if d != pkg && (d == "github.com/jobwatch/jobwatch" || strings.HasPrefix(d, "github.com/jobwatch/jobwatch/")) {
			out = append(out, d)
		}
	}
	return out
}

// schedule is a leaf: config validates schedules by calling it, so it
// cannot know config, nor anything else of jobwatch.
func TestScheduleIsALeaf(t *testing.T) {
	if deps := importsOf(t, "github.com/jobwatch/jobwatch/schedule"); len(deps) > 0 {
		t.Errorf("schedule imports %v (see go list -deps jobwatch/schedule)", deps)
	}
}

// discover reads jobwatch run's command lines; what it shares with the
// wrapper that runs them is in internal/runcmd, not in wrapper.
func TestDiscoverImportsNoWrapper(t *testing.T) {
	for _, d := range importsOf(t, "github.com/jobwatch/jobwatch/discover") {
		if d == "github.com/jobwatch/jobwatch/wrapper" || strings.HasPrefix(d, "github.com/jobwatch/jobwatch/wrapper/") {
			t.Errorf("discover imports %s (see go list -deps jobwatch/discover)", d)
		}
	}
}

// No layer above sources/ names a source package: the exporter, the model,
// the collector and the status page know sources through the registry
// (sources.Register, sources.RegisterService, observation.Register), and
// only sources/all imports the source packages, for their registrations.
func TestNoLayerNamesASource(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/jobwatch/jobwatch/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		for _, imp := range fields[1:] {
			kind, ok := strings.CutPrefix(imp, "github.com/jobwatch/jobwatch/sources/")
			if !ok || kind == "all" {
				continue
			}
			own := "github.com/jobwatch/jobwatch/sources/" + strings.SplitN(kind, "/", 2)[0]
			if pkg != "github.com/jobwatch/jobwatch/sources/all" && pkg != own && !strings.HasPrefix(pkg, own+"/") {
				t.Errorf("%s imports the source package %s", pkg, imp)
			}
		}
	}
}

// module is jobwatch's module path.
const module = "github.com/jobwatch/jobwatch"

// testSupport holds every package that exists for the tests: servers and
// browsers they start, helpers to wait and build, shared fixtures and
// tests, and the benchmark programs built on them (internal/testsupport/).
const testSupport = module + "/internal/testsupport/"

func isTestRig(pkg string) bool { return strings.HasPrefix(pkg, testSupport) }

// productImports maps every package of the module to what its own code
// (tests aside) imports.
func productImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		imports[fields[0]] = fields[1:]
	}
	if len(imports) < 20 {
		t.Fatalf("go list found only %d packages", len(imports))
	}
	return imports
}

// A test rig is imported by tests and by other rigs only: the product's
// code never depends on what exists to test it. Every rig lives under
// internal/testsupport/: a package named like one (…test) elsewhere fails.
func TestRigsOnlyInTests(t *testing.T) {
	imports := productImports(t)
	found := 0
	for pkg, imps := range imports {
		if isTestRig(pkg) {
			found++
			continue
		}
		if strings.HasSuffix(pkg, "test") {
			t.Errorf("%s looks like a test rig: move it under internal/testsupport/", pkg)
		}
		for _, imp := range imps {
			if isTestRig(imp) {
				t.Errorf("%s imports the test rig %s", pkg, imp)
			}
		}
	}
	if found < 10 {
		t.Errorf("found %d test rigs under %s: is the prefix still right?", found, testSupport)
	}
}

// The exporter wires sources, model, saver and collector together; only
// the command (cmd/) builds one. A package below it importing it would
// run an arrow back up the layers.
func TestOnlyCmdImportsExporter(t *testing.T) {
	for pkg, imps := range productImports(t) {
		if strings.HasPrefix(pkg, module+"/cmd/") || strings.HasPrefix(pkg, module+"/exporter/") {
			continue
		}
		if slices.Contains(imps, module+"/exporter") {
			t.Errorf("%s imports exporter: only cmd/ may", pkg)
		}
	}
}

// The shipped binaries (cmd/...: jobwatch, jobwatch-run) link no test rig
// (go list -deps ./cmd/jobwatch).
func TestBinaryLinksNoRig(t *testing.T) {
	binaries := goList(t, "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, module+"/cmd/...")
	if !slices.Contains(binaries, module+"/cmd/jobwatch") {
		t.Fatalf("go list cmd/... lacks cmd/jobwatch: %v", binaries)
	}
	for _, bin := range binaries {
		for _, d := range goList(t, "-deps", bin) {
			if isTestRig(d) {
				t.Errorf("%s links the test rig %s", bin, d)
			}
		}
	}
}

// maxFileLines bounds a non-test Go file: past it a file mixes parts a
// reader wants apart (issue 44).
const maxFileLines = 800

// No non-test Go file is over maxFileLines lines.
func TestNoFileOverMaxLines(t *testing.T) {
	root := goList(t, "-m", "-f", "{{.Dir}}")[0]
	for _, line := range goList(t, "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}`, module+"/...") {
		b, err := os.ReadFile(line)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, line)
		rel = filepath.ToSlash(rel)
		n := strings.Count(string(b), "\n")
		if n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it by what its parts do", rel, n, maxFileLines)
		}
	}
}
