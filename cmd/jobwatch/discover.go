package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/jobwatch/jobwatch/discover"
)

// addDiscoverCommand defines `jobwatch discover`, which reads a host's
// crontabs and timers, writes the jobwatch.yml that watches them and prints
// what it found wrong. It exits 1 when a finding is a warning, 2 when it
// could not write the config.
func addDiscoverCommand(app *kingpin.Application) (*kingpin.CmdClause, func(stdout, stderr io.Writer) int) {
	cmd := app.Command("discover", "Find the host's cron jobs and systemd timers, write a jobwatch.yml for them and report scheduling mistakes.")
	root := cmd.Flag("root", "Read the host's files under this directory.").Default("/").String()
	output := cmd.Flag("output", "Where to write the config; - for stdout. An existing file is replaced only with --force, or when it is the --merge file.").Default("jobwatch.yml").String()
	force := cmd.Flag("force", "Replace an existing --output file.").Bool()
	format := cmd.Flag("format", "Output format: yaml (config with comments, findings as text on stderr) or json (config as JSON, findings as JSON lines).").Default("yaml").Enum("yaml", "json")
	runLog := cmd.Flag("run-log", "Run log of jobwatch run lines that name no --log.").Default("").PlaceHolder("PATH").String()
	mergeFile := cmd.Flag("merge", "Existing config: keep its jobs and sources, add only the jobs it does not watch.").PlaceHolder("FILE").String()
	return cmd, func(stdout, stderr io.Writer) int {
		o := discoverOptions{root: *root, output: *output, json: *format == "json", runLog: *runLog, merge: *mergeFile, force: *force}
		return runDiscover(o, stdout, stderr)
	}
}

type discoverOptions struct {
	root, output, runLog, merge string
	json, force                 bool
}

func runDiscover(o discoverOptions, stdout, stderr io.Writer) int {
	replace, err := mayReplace(o)
	if err != nil {
		fmt.Fprintln(stderr, "jobwatch discover:", err)
		return 2
	}
	h, err := discover.Read(o.root)
	if err != nil {
		fmt.Fprintln(stderr, "jobwatch discover:", err)
		return 2
	}
	findings := discover.Check(h, discover.Options{Now: time.Now()})
	gen := discover.GenerateOptions{RunLog: o.runLog, JSON: o.json}
	if o.merge != "" {
		if gen.Merge, err = discover.ReadRegular(o.merge); err != nil {
			fmt.Fprintln(stderr, "jobwatch discover: --merge:", err)
			return 2
		}
	}
	data, err := discover.Generate(h, gen)
	if err == nil {
		err = writeOutput(o.output, data, stdout, replace)
	}
	if werr := discover.WriteFindings(stderr, findings, o.json); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobwatch discover:", err)
		return 2
	}
	if o.output != "-" && o.output != "" && !o.json {
		fmt.Fprintf(stderr, "%s: %s, %s\n", o.output, plural(len(h.Jobs), "job"), plural(len(findings), "finding"))
	}
	if discover.HasWarnings(findings) {
		return 1
	}
	return 0
}

// mayReplace says whether --output may replace a file there: with --force,
// or when it is the --merge file (merging into one's own config is the
// documented workflow). An existing output file otherwise is an error that
// names it and --force.
func mayReplace(o discoverOptions) (bool, error) {
	if o.output == "-" || o.output == "" || o.force {
		return true, nil
	}
	out, err := os.Lstat(o.output)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if o.merge != "" {
		if m, err := os.Lstat(o.merge); err == nil && os.SameFile(out, m) {
			return true, nil
		}
	}
	return false, fmt.Errorf("%s exists: give --force to replace it (or --merge %s to add the host's jobs to it)", o.output, o.output)
}

// writeOutput writes data to path atomically (a new file renamed over the
// old one, never through a symbolic link), or to stdout for "-". Unless
// replace, a file at path is never replaced (the new one is linked there,
// which fails if one exists). The file may hold commands of cron lines: it
// is not world-readable.
func writeOutput(path string, data []byte, stdout io.Writer, replace bool) error {
	if path == "-" || path == "" { // kingpin reads "--output -" as ""
		_, err := stdout.Write(data)
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, a no-op
	if err := f.Chmod(0o640); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !replace {
		if err := os.Link(tmp, path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s exists: give --force to replace it", path)
			}
			return err
		}
		return nil
	}
	return os.Rename(tmp, path)
}
