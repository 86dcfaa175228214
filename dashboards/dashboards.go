// Package dashboards holds jobwatch's bundled Grafana dashboard
// (jobwatch.json, generated from the monitoring mixin in mixin/ by
// `go generate ./mixin`), embedded so that a command or a test can read it,
// and lists the PromQL queries of its panels and variables.
package dashboards

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// JSON is dashboards/jobwatch.json.
//
//go:embed jobwatch.json
var JSON []byte

// Query is one PromQL query of the dashboard.
type Query struct {
	// Where names it: "panel <title> <refId>" or "variable <name>".
	Where string
	// Expr is the query as written, with Grafana's variables.
	Expr string
	// Instant is true for a table or stat query evaluated at one time.
	Instant bool
}

// Panel is the part of a Grafana panel the tests look at.
type Panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *Datasource    `json:"datasource"`
	GridPos    map[string]int `json:"gridPos"`
	Targets    []Target       `json:"targets"`
	Panels     []Panel        `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
	Instant    bool        `json:"instant"`
	Format     string      `json:"format"`
}

// Datasource is a panel's or query's data source reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *Datasource     `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

// Input is one entry of __inputs, asked for on import.
type Input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

// Dashboard is the part of the dashboard the tests look at.
type Dashboard struct {
	Inputs     []Input `json:"__inputs"`
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Parse reads the dashboard.
func Parse(data []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("parsing dashboard: %w", err)
	}
	return &d, nil
}

// AllPanels lists the panels, those inside rows included, in order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var (
	labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	queryResultRE = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
)

// Queries lists every PromQL query of the dashboard: each panel target's
// expr, the series selector of each label_values() variable query, and
// the query of each query_result() one.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			if strings.TrimSpace(t.Expr) == "" {
				return nil, fmt.Errorf("panel %q target %s: empty expr", p.Title, t.RefID)
			}
			out = append(out, Query{Where: fmt.Sprintf("panel %q %s", p.Title, t.RefID), Expr: t.Expr, Instant: t.Instant})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			m = queryResultRE.FindStringSubmatch(v.Definition)
		}
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label) or query_result(query)", v.Name, v.Definition)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: m[1], Instant: true})
	}
	return out, nil
}

// Builtin are Grafana's own variables the dashboard uses, with values fit
// for checking and running the queries outside Grafana.
var Builtin = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "1m",
	"__range":         "1h",
}

var varRE = regexp.MustCompile(`\$\{([a-zA-Z0-9_]+)(?::[a-z]+)?\}|\$([a-zA-Z0-9_]+)`)

// Expand replaces Grafana variables ($name, ${name}, ${name:fmt}) in expr
// by vals; it returns the names it did not know, sorted.
func Expand(expr string, vals map[string]string) (string, []string) {
	unknown := map[string]bool{}
	s := varRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := vals[name]; ok {
			return v
		}
		unknown[name] = true
		return m
	})
	var names []string
	for n := range unknown {
		names = append(names, n)
	}
	sort.Strings(names)
	return s, names
}
