package mixin

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// keyOrder is where known keys of a rule file go, before any other key
// (those in alphabetical order): the order Prometheus' docs write them in.
var keyOrder = map[string]int{
	"name": 1, "interval": 2, "limit": 3, "rules": 4,
	"alert": 10, "record": 11, "expr": 12, "for": 13, "keep_firing_for": 14, "labels": 15, "annotations": 16,
	"summary": 20, "description": 21, "runbook_url": 22,
}

// RulesYAML renders a rule file given as JSON as readable, stable YAML:
// block mappings and sequences indented by two, known keys in their usual
// order, multi-line strings (expressions) as literal blocks, other strings
// plain, or single-quoted when they hold a template or a quote, a blank line between rules. comments[g][r], when
// not empty, is written as a comment above the expr of rule r of group g.
func RulesYAML(data []byte, comments [][]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading rules: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("reading rules: not one document")
	}
	restyle(doc.Content[0])
	if err := addComments(doc.Content[0], comments); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("writing rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing rules: %w", err)
	}
	return spaceRules(buf.Bytes()), nil
}

// restyle drops the flow and quoting styles the JSON input implies and
// orders mapping keys.
func restyle(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		n.Style = 0
		type pair struct{ k, v *yaml.Node }
		pairs := make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, pair{n.Content[i], n.Content[i+1]})
		}
		sort.SliceStable(pairs, func(i, j int) bool {
			oi, oj := keyOrder[pairs[i].k.Value], keyOrder[pairs[j].k.Value]
			switch {
			case oi != 0 && oj != 0:
				return oi < oj
			case oi != 0 || oj != 0:
				return oi != 0
			default:
				return pairs[i].k.Value < pairs[j].k.Value
			}
		})
		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p.k, p.v)
			restyle(p.k)
			restyle(p.v)
		}
	case yaml.SequenceNode:
		n.Style = 0
		for _, c := range n.Content {
			restyle(c)
		}
	case yaml.ScalarNode:
		n.Style = 0
		switch {
		case n.Tag != "!!str":
		case strings.Contains(n.Value, "\n"):
			n.Style = yaml.LiteralStyle
		case strings.ContainsAny(n.Value, "{\""):
			// Templates: quoted, so a reader never wonders.
			n.Style = yaml.SingleQuotedStyle
		}
	}
}

// addComments puts each rule's comment above its expr key.
func addComments(root *yaml.Node, comments [][]string) error {
	groups := mapValue(root, "groups")
	if groups == nil || groups.Kind != yaml.SequenceNode {
		return fmt.Errorf("rules: no groups")
	}
	for g, group := range groups.Content {
		rules := mapValue(group, "rules")
		if rules == nil {
			continue
		}
		for r, rule := range rules.Content {
			if g >= len(comments) || r >= len(comments[g]) || comments[g][r] == "" {
				continue
			}
			for i := 0; i+1 < len(rule.Content); i += 2 {
				if rule.Content[i].Value == "expr" {
					lines := strings.Split(strings.TrimRight(comments[g][r], "\n"), "\n")
					for j, l := range lines {
						lines[j] = strings.TrimRight("# "+l, " ")
					}
					rule.Content[i].HeadComment = strings.Join(lines, "\n")
				}
			}
		}
	}
	return nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

var ruleStart = regexp.MustCompile(`(?m)^      - (alert|record): `)

// spaceRules puts a blank line before every rule but the first of its
// group.
func spaceRules(b []byte) []byte {
	locs := ruleStart.FindAllIndex(b, -1)
	var out bytes.Buffer
	last := 0
	for _, l := range locs {
		out.Write(b[last:l[0]])
		if l[0] > 0 && !bytes.HasSuffix(b[:l[0]], []byte("rules:\n")) {
			out.WriteByte('\n')
		}
		last = l[0]
	}
	out.Write(b[last:])
	return out.Bytes()
}
