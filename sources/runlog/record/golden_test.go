package record

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden parses every line of testdata/<format>.txt and compares the
// events and errors with testdata/<format>.golden.
func TestGolden(t *testing.T) {
	var rc Config
	raw, err := os.ReadFile("testdata/regex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rc); err != nil {
		t.Fatal(err)
	}
	regex, err := FromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format string
		p      Parser
	}{
		{"json", NewJSON(Options{})},
		{"logfmt", NewLogfmt(Options{})},
		{"regex", regex},
	} {
		t.Run(tc.format, func(t *testing.T) {
			p := tc.p
			in, err := os.ReadFile(filepath.Join("testdata", tc.format+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(in))
			for sc.Scan() {
				var ev model.Event
				err := p.Parse(sc.Bytes(), &ev)
				switch {
				case errors.Is(err, ErrNoMatch), errors.Is(err, ErrEmpty):
					fmt.Fprintf(&out, "skip  %v\n", err)
				case err != nil:
					fmt.Fprintf(&out, "error %v\n", err)
				default:
					fmt.Fprintf(&out, "event %s\n", formatEvent(ev))
				}
			}
			golden := filepath.Join("testdata", tc.format+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update to rewrite):\n%s", golden, out.String())
			}
		})
	}
}
