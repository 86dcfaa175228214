package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"
	"go.yaml.in/yaml/v3"
)

// Decode decodes n into v (a pointer to a struct with yaml tags) and returns
// every problem at once, each starting with its line: yaml's type errors (a
// bad duration, a string where a list belongs) and every key that names no
// field, at any depth. Keys listed in skip are allowed at the top level
// (a source block's name and type). what names the kind of block in
// unknown-key errors, such as `type "mysql"`; empty, errors say only the key.
func Decode(n *yaml.Node, v any, what string, skip ...string) []error {
	var errs []lineError
	if err := n.Decode(v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				errs = append(errs, parseLineError(m))
			}
		} else {
			errs = append(errs, parseLineError(err.Error()))
		}
	}
	errs = append(errs, unknownKeys(n, reflect.TypeOf(v), what, skip, 0)...)
	slices.SortStableFunc(errs, func(a, b lineError) int { return a.line - b.line })
	out := make([]error, len(errs))
	for i := range errs {
		out[i] = errs[i]
	}
	return out
}

// DecodeBlock decodes a source's block into v, as Decode does; its name and
// type keys are allowed.
func DecodeBlock(b Block, v any) []error {
	return Decode(b.Node, v, fmt.Sprintf("type %q", b.Type), "name", "type")
}

// lineError is a problem at a line of the config file (0: unknown).
type lineError struct {
	line int
	msg  string
}

func (e lineError) Error() string { return e.msg }

var lineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): `) })

func parseLineError(msg string) lineError {
	e := lineError{msg: msg}
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		e.line, _ = strconv.Atoi(m[1])
	}
	return e
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
)

// maxDepth bounds the walk through aliases of aliases.
const maxDepth = 64

// unknownKeys reports the mapping keys of n that name no field of t.
func unknownKeys(n *yaml.Node, t reflect.Type, what string, skip []string, depth int) []lineError {
	if n == nil || t == nil || depth > maxDepth {
		return nil
	}
	n, depth = dealias(n, depth)
	if n == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // decodes itself
	}
	var errs []lineError
	switch t.Kind() {
	case reflect.Struct:
		return unknownFields(n, t, what, skip, depth)
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				errs = append(errs, unknownKeys(c, t.Elem(), what, nil, depth+1)...)
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				errs = append(errs, unknownKeys(n.Content[i], t.Elem(), what, nil, depth+1)...)
			}
		}
	}
	return errs
}

// dealias follows n's aliases and unwraps a document: it returns the node
// that is decoded, nil past maxDepth.
func dealias(n *yaml.Node, depth int) (*yaml.Node, int) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
		depth++
		if depth > maxDepth {
			return nil, depth
		}
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n, depth
}

// unknownFields reports the keys of the mapping n, and of the mappings it
// merges, that name no field of the struct t nor are in skip, and the
// unknown keys of its fields' values.
func unknownFields(n *yaml.Node, t reflect.Type, what string, skip []string, depth int) []lineError {
	if n.Kind != yaml.MappingNode {
		return nil // a type error, which Decode reports
	}
	fields := fieldsOf(t)
	var errs []lineError
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.Tag == "!!merge" {
			if val.Kind == yaml.SequenceNode {
				for _, m := range val.Content {
					errs = append(errs, unknownKeys(m, t, what, skip, depth+1)...)
				}
			} else {
				errs = append(errs, unknownKeys(val, t, what, skip, depth+1)...)
			}
			continue
		}
		ft, ok := fields[k.Value]
		if !ok {
			if !slices.Contains(skip, k.Value) {
				msg := fmt.Sprintf("line %d: unknown field %q", k.Line, k.Value)
				if what != "" {
					msg += " for " + what
				}
				errs = append(errs, lineError{k.Line, msg})
			}
			continue
		}
		errs = append(errs, unknownKeys(val, ft, what, nil, depth+1)...)
	}
	return errs
}

// fieldCache holds yamlFields of each struct type checked: a config of
// 50,000 jobs checked each job's keys against a map made anew, 50 MB of
// garbage at every load.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf is yamlFields(t), made once per type; callers only read it.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := fieldCache.LoadOrStore(t, yamlFields(t))
	return m.(map[string]reflect.Type)
}

// yamlFields maps the keys of a struct type to their field types, as
// yaml.v3 names them (inline structs included).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					m[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

// Join collects config problems into one error that lists each on a line,
// as check-config prints them; nil when there are none. Every package that
// reports config problems collects them with it.
func Join(errs ...error) error {
	var me *multierror.Error
	for _, err := range errs {
		if err != nil {
			me = multierror.Append(me, err)
		}
	}
	if me == nil {
		return nil
	}
	me.ErrorFormat = listErrors
	return me
}

// Prefix returns errs, each prefixed with where ("source \"db\"").
func Prefix(where string, errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = fmt.Errorf("%s: %w", where, err)
	}
	return out
}
