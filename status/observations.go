package status

import (
	"bytes"
	"fmt"
	"html/template"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/observation"
)

// Observations are what sources observe of a job besides runs (a lock's
// state), by kind name ("locks"), each with its key ("lock": the path)
// and its fields; every registered kind is present, empty when nothing is
// observed.
type Observations map[string][]map[string]any

// observationsByJob groups the sources' observations by job, their fields
// taken at now.
func observationsByJob(sources []model.SourceView, now time.Time) map[string]Observations {
	out := map[string]Observations{}
	for _, s := range sources {
		for _, o := range s.Observations {
			kind := observation.Lookup(o.Kind)
			if kind == nil {
				continue
			}
			item := map[string]any{kind.Key: o.Key}
			for _, f := range o.Fields {
				item[f.Name] = f.At(now)
			}
			if out[o.Job] == nil {
				out[o.Job] = Observations{}
			}
			out[o.Job][o.Kind] = append(out[o.Job][o.Kind], item)
		}
	}
	return out
}

// withEveryKind is obs with every registered kind present.
func withEveryKind(obs Observations) Observations {
	out := Observations{}
	for _, k := range observation.Kinds() {
		out[k.Name] = obs[k.Name]
		if out[k.Name] == nil {
			out[k.Name] = []map[string]any{}
		}
	}
	return out
}

// observedList is one kind's lines on a job's page.
type observedList struct {
	Title string
	Lines []template.HTML
}

// observedLists renders a job's observations with their kinds' Text, in
// the kinds' order; a kind with none is left out.
func observedLists(obs Observations) ([]observedList, error) {
	var out []observedList
	for _, k := range observation.Kinds() {
		items := obs[k.Name]
		if len(items) == 0 {
			continue
		}
		tmpl, err := kindText(k)
		if err != nil {
			return nil, err
		}
		l := observedList{Title: k.Title}
		for _, item := range items {
			var b bytes.Buffer
			if err := tmpl.Execute(&b, item); err != nil {
				return nil, fmt.Errorf("observation of kind %q: %w", k.Name, err)
			}
			l.Lines = append(l.Lines, template.HTML(b.String())) //nolint:gosec // html/template's output, escaped
		}
		out = append(out, l)
	}
	return out, nil
}

var kindTexts sync.Map // kind name → *template.Template

// kindText is a kind's line template: its key in code, then its Text.
func kindText(k *observation.Kind) (*template.Template, error) {
	if t, ok := kindTexts.Load(k.Name); ok {
		return t.(*template.Template), nil
	}
	t, err := template.New(k.Name).Funcs(template.FuncMap{
		"seconds": func(v any) string {
			if f, ok := v.(float64); ok {
				return durText(f)
			}
			return "–"
		},
		"no": func(v any) bool { return v == false },
	}).Parse(fmt.Sprintf(`<code>{{index . %q}}</code> `, k.Key) + k.Text)
	if err != nil {
		return nil, fmt.Errorf("the status line of observation kind %q: %w", k.Name, err)
	}
	kindTexts.Store(k.Name, t)
	return t, nil
}
