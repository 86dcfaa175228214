package mixin

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/formatter"
	"github.com/google/go-jsonnet/linter"
)

// TestFormatted: the jsonnet is as jsonnetfmt writes it (its default
// options), as mixins keep theirs.
func TestFormatted(t *testing.T) {
	err := fs.WalkDir(Sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Sources, path)
		if err != nil {
			return err
		}
		want, err := formatter.Format(path, string(data), formatter.DefaultOptions())
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if want != string(data) {
			t.Errorf("%s is not formatted as jsonnetfmt does:\n%s", path, firstDiff(data, []byte(want)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLint: jsonnet-lint finds nothing (unused locals, unknown fields,
// bad types) in the mixin.
func TestLint(t *testing.T) {
	vm := jsonnet.MakeVM()
	vm.Importer(&fsImporter{fsys: Sources})
	var snippets []linter.Snippet
	err := fs.WalkDir(Sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Sources, path)
		snippets = append(snippets, linter.Snippet{FileName: path, Code: string(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if linter.LintSnippet(vm, &out, snippets) {
		t.Errorf("jsonnet-lint:\n%s", out.String())
	}
}
