package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The job model stays in parts a maintainer can hold (docs/development.md,
// "The job model"): no type of the model's packages has more than
// maxModelMethods methods, counting those it gets from the types it
// embeds, and no file of their production code is longer than
// maxModelFileLines. A type past it is split along its parts (the
// state machine, the orderer, the change log), not excused.
const (
	maxModelMethods   = 30
	maxModelFileLines = 800
)

func TestModelTypesStaySmall(t *testing.T) {
	pkgs := goList(t, "github.com/jobwatch/jobwatch/model/...")
	counted := 0
	for _, pkg := range pkgs {
		dir := goList(t, "-f", "{{.Dir}}", pkg)[0]
		names := goList(t, "-f", `{{join .GoFiles " "}}`, pkg)
		sets := modelMethodSets(t, dir, names)
		counted += len(sets)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range sets {
				if !yield(n) {
					return
				}
			}
		}) {
			if s := sets[name]; len(s.all) > maxModelMethods {
				t.Errorf("%s.%s has %d methods (%d its own%s); at most %d: split it along the model's parts",
					filepath.Base(pkg), name, len(s.all), s.own, s.promotedFrom(), maxModelMethods)
			}
		}
	}
	// The count must see the façade and its parts, or it proves nothing.
	if counted < 10 {
		t.Fatalf("found methods on only %d types of %v", counted, pkgs)
	}
}

func TestModelFilesStayShort(t *testing.T) {
	for _, pkg := range goList(t, "github.com/jobwatch/jobwatch/model/...") {
		dir := goList(t, "-f", "{{.Dir}}", pkg)[0]
		for _, name := range goList(t, "-f", `{{join .GoFiles " "}}`, pkg) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "\n"); n > maxModelFileLines {
				t.Errorf("%s/%s has %d lines; at most %d", filepath.Base(pkg), name, n, maxModelFileLines)
			}
		}
	}
}

// methodSet is a named type's methods: all of them by name, how many it
// declares, and the embedded types the others come from.
type methodSet struct {
	all  map[string]bool
	own  int
	from []string
}

func (s methodSet) promotedFrom() string {
	if len(s.from) == 0 {
		return ""
	}
	return ", the others from " + strings.Join(s.from, ", ")
}

// modelMethodSets parses the files names of dir and returns the method
// set of each named type with methods: those declared on it (value or
// pointer receiver) and those promoted from the types of the package it
// embeds, at any depth. An interface counts its methods.
func modelMethodSets(t *testing.T, dir string, names []string) map[string]methodSet {
	t.Helper()
	fset := token.NewFileSet()
	declared := map[string][]string{} // type -> its methods
	embeds := map[string][]string{}   // struct type -> the local types it embeds
	for _, name := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv := typeName(d.Recv.List[0].Type)
					declared[recv] = append(declared[recv], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					switch tt := ts.Type.(type) {
					case *ast.StructType:
						for _, field := range tt.Fields.List {
							if len(field.Names) == 0 {
								embeds[ts.Name.Name] = append(embeds[ts.Name.Name], typeName(field.Type))
							}
						}
					case *ast.InterfaceType:
						for _, m := range tt.Methods.List {
							for _, n := range m.Names {
								declared[ts.Name.Name] = append(declared[ts.Name.Name], n.Name)
							}
						}
					}
				}
			}
		}
	}
	var collect func(name string, into map[string]bool, seen map[string]bool)
	collect = func(name string, into map[string]bool, seen map[string]bool) {
		if seen[name] {
			return
		}
		seen[name] = true
		for _, m := range declared[name] {
			into[m] = true
		}
		for _, e := range embeds[name] {
			collect(e, into, seen)
		}
	}
	sets := map[string]methodSet{}
	for name := range declared {
		s := methodSet{all: map[string]bool{}, own: len(declared[name])}
		collect(name, s.all, map[string]bool{})
		for _, e := range embeds[name] {
			if len(declared[e]) > 0 || len(embeds[e]) > 0 {
				s.from = append(s.from, e)
			}
		}
		sets[name] = s
	}
	for name := range embeds {
		if _, ok := sets[name]; !ok {
			s := methodSet{all: map[string]bool{}}
			collect(name, s.all, map[string]bool{})
			s.from = slices.Clone(embeds[name])
			if len(s.all) > 0 {
				sets[name] = s
			}
		}
	}
	return sets
}

// typeName is the name of a receiver's or an embedded field's type:
// T, *T, T[P], *T[P] all name T; a type of another package is named
// with its package (pkg.T), and never has methods here.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return fmt.Sprintf("%s.%s", typeName(e.X), e.Sel.Name)
	}
	return fmt.Sprintf("%T", e)
}
