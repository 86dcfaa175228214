package mixin

import (
	"io/fs"
	"testing"

	"github.com/google/go-jsonnet/formatter"
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
