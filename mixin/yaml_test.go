package mixin

import (
	"testing"
)

func TestRulesYAML(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		comments   [][]string
		want       string
	}{
		{
			name: "known keys first, in order; multi-line expr as a literal block; templates quoted",
			json: `{"groups":[{"rules":[{"annotations":{"runbook_url":"a#b","summary":"Job {{ $labels.job_name }}","description":"say \"hi\""},"expr":"up\n== 0\n","for":"5m","alert":"A","labels":{"severity":"warning"}}],"name":"g"}]}`,
			want: `groups:
  - name: g
    rules:
      - alert: A
        expr: |
          up
          == 0
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: 'Job {{ $labels.job_name }}'
          description: 'say "hi"'
          runbook_url: a#b
`,
		},
		{
			name:     "comments above expr; a blank line between rules; strings that look like numbers stay strings",
			json:     `{"groups":[{"name":"g","rules":[{"alert":"A","expr":"x","labels":{"n":"10"}},{"alert":"B","expr":"y"}]}]}`,
			comments: [][]string{{"", "Value: y.\nTwo lines."}},
			want: `groups:
  - name: g
    rules:
      - alert: A
        expr: x
        labels:
          n: "10"

      - alert: B
        # Value: y.
        # Two lines.
        expr: y
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RulesYAML([]byte(tc.json), tc.comments)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestRulesYAMLErrors(t *testing.T) {
	for _, in := range []string{`[`, `{"groups": 3}`, `{}`} {
		if _, err := RulesYAML([]byte(in), nil); err == nil {
			t.Errorf("RulesYAML(%s): no error", in)
		}
	}
}
