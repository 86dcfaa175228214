// Package mixin builds jobwatch's monitoring mixin: the jsonnet in this
// directory (mixin.libsonnet, with its _config) evaluated with go-jsonnet
// into the files users load, alerts/jobwatch.rules.yml and
// dashboards/jobwatch.json. `go generate ./mixin` writes them; the tests
// fail when the committed files differ from what the mixin yields.
package mixin

//go:generate go run ./cmd/generate -root ..

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
)

// Sources is the mixin's jsonnet.
//
//go:embed *.libsonnet alerts/*.libsonnet dashboards/*.libsonnet lib/*.libsonnet
var Sources embed.FS

// Output files, relative to the repository root.
const (
	RulesFile     = "alerts/jobwatch.rules.yml"
	DashboardsDir = "dashboards"
)

// Output is what the mixin yields for one _config.
type Output struct {
	// Rules is the rule file, as YAML with a header comment.
	Rules []byte
	// Dashboards maps a file name in DashboardsDir to its JSON.
	Dashboards map[string][]byte
}

// Files lists the output by path relative to the repository root, sorted.
func (o *Output) Files() ([]string, map[string][]byte) {
	files := map[string][]byte{RulesFile: o.Rules}
	for name, data := range o.Dashboards {
		files[path.Join(DashboardsDir, name)] = data
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, files
}

// evaluated is what the snippet below returns: the two mixin outputs, the
// hidden comment of each rule (written above its expr), and the header.
type evaluated struct {
	Rules      json.RawMessage            `json:"rules"`
	Comments   [][]string                 `json:"comments"`
	Header     string                     `json:"header"`
	Dashboards map[string]json.RawMessage `json:"dashboards"`
}

const snippet = `
local mixin = (import 'mixin.libsonnet') + { _config+:: std.parseJson(std.extVar('config')) };
{
  rules: mixin.prometheusAlerts,
  comments: [
    [if std.objectHasAll(r, 'comment') then r.comment else '' for r in g.rules]
    for g in mixin.prometheusAlerts.groups
  ],
  header: (import 'alerts/header.libsonnet')(mixin._config),
  dashboards: mixin.grafanaDashboards,
}
`

// Generate evaluates the mixin with config (a JSON object, merged into
// _config; empty for the defaults) and renders its files.
func Generate(config string) (*Output, error) {
	if strings.TrimSpace(config) == "" {
		config = "{}"
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&fsImporter{fsys: Sources})
	vm.ExtVar("config", config)
	out, err := vm.EvaluateAnonymousSnippet("generate.jsonnet", snippet)
	if err != nil {
		return nil, fmt.Errorf("evaluating the mixin: %w", err)
	}
	var ev evaluated
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		return nil, fmt.Errorf("reading the mixin's output: %w", err)
	}
	rules, err := RulesYAML(ev.Rules, ev.Comments)
	if err != nil {
		return nil, err
	}
	o := &Output{Rules: append([]byte(ev.Header), rules...), Dashboards: map[string][]byte{}}
	for name, raw := range ev.Dashboards {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", name, err)
		}
		buf.WriteByte('\n')
		o.Dashboards[name] = buf.Bytes()
	}
	return o, nil
}

// fsImporter resolves imports relative to the importing file inside fsys,
// as the jsonnet command does on disk.
type fsImporter struct {
	fsys  fs.FS
	mu    sync.Mutex
	cache map[string]jsonnet.Contents
}

func (i *fsImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	p := path.Clean(path.Join(path.Dir(importedFrom), importedPath))
	i.mu.Lock()
	defer i.mu.Unlock()
	if c, ok := i.cache[p]; ok {
		return c, p, nil
	}
	data, err := fs.ReadFile(i.fsys, p)
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("import %q from %q: %w", importedPath, importedFrom, err)
	}
	if i.cache == nil {
		i.cache = map[string]jsonnet.Contents{}
	}
	c := jsonnet.MakeContentsRaw(data)
	i.cache[p] = c
	return c, p, nil
}
