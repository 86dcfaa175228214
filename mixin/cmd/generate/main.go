// Command generate writes the files of jobwatch's monitoring mixin,
// alerts/jobwatch.rules.yml and dashboards/jobwatch.json, from the jsonnet
// in mixin/. Run it with `go generate ./mixin` after changing the mixin.
//
//	go run ./mixin/cmd/generate [-root DIR] [-config JSON]
//
// -config merges a JSON object into the mixin's _config, for example
// '{"clusterLabel": "cluster"}', to write files for your own setup.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jobwatch/jobwatch/mixin"
)

func main() {
	root := flag.String("root", ".", "repository root to write the files under")
	config := flag.String("config", "", "JSON object merged into the mixin's _config")
	flag.Parse()
	if err := run(*root, *config); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(root, config string) error {
	out, err := mixin.Generate(config)
	if err != nil {
		return err
	}
	names, files := out.Files()
	for _, name := range names {
		if err := writeFile(filepath.Join(root, filepath.FromSlash(name)), files[name]); err != nil {
			return err
		}
	}
	return nil
}

// writeFile replaces path atomically: a temporary file in the same
// directory, renamed over it.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
