package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

func intp(n int) *int { return &n }

// specPattern is the example of the spec: skips logged by an application.
var specPattern = Pattern{
	Regex:  `^(?P<time>\S+ \S+) .*\[(?P<job>[\w.-]+)\] previous run still running, skipping`,
	Event:  "skip",
	Reason: "locked",
}

// allGroups uses every named group.
var allGroups = Pattern{
	Regex: `^(?P<time>\S+) job=(?P<job>\S+) (?P<event>[a-z]+)(?: status=(?P<status>\S+))?(?: exit=(?P<exit_code>\S+))?` +
		`(?: took=(?P<duration_seconds>\S+)s)?(?: pid=(?P<pid>\S+))?(?: host=(?P<host>\S+))?(?: run=(?P<run_id>\S+))?` +
		`(?: reason=(?P<reason>\S+))?(?: holder=(?P<holder_pid>\S+))?$`,
}

// fixedAll gives every fixed field; the optional groups override them.
var fixedAll = Pattern{
	Regex: `^(?P<time>\S+) backup finished OK(?: job=(?P<job>\S+))?(?: status=(?P<status>\S+))?(?: exit=(?P<exit_code>\S+))?`,
	Job:   "backup", Event: "end", Status: "success", Host: "db1", ExitCode: intp(0), Reason: "maintenance",
}

func TestRegex(t *testing.T) {
	spec := Options{TimeFormat: "2006-01-02 15:04:05.000", Location: shanghai}
	for _, tc := range []struct {
		name string
		pats []Pattern
		opts Options
		line string
		want *model.Event
		err  string // "" with want nil: ErrNoMatch
	}{
		{name: "spec example", pats: []Pattern{specPattern}, opts: spec,
			line: "2026-11-30 19:00:00.010 WARN [scheduler] [stats] previous run still running, skipping",
			want: &model.Event{Time: t2, Job: "stats", Kind: model.Skip, Reason: "locked", SkipLabel: "locked"}},
		{name: "spec example, unrelated line", pats: []Pattern{specPattern}, opts: spec,
			line: "2026-11-30 19:00:00.010 INFO [web] GET /index.html 200"},
		{name: "empty line", pats: []Pattern{specPattern}, opts: spec, line: ""},
		{name: "all groups, start", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats start pid=4242 host=web1 run=optional", want: &startEv},
		{name: "all groups, end", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:40.500Z job=stats end status=success exit=0 took=40.4s pid=4242 host=web1", want: &endEv},
		{name: "all groups, skip", pats: []Pattern{allGroups},
			line: "2026-11-30T11:00:00.010Z job=stats skip pid=4300 host=web1 reason=locked holder=4242", want: &skipEv},
		{name: "default time without offset in location", pats: []Pattern{allGroups}, opts: Options{Location: shanghai},
			line: "2026-11-30T18:00:00.123 job=stats start", want: &minEv},
		{name: "fixed fields fill what the line lacks", pats: []Pattern{fixedAll},
			line: "2026-11-30T10:00:40.5Z backup finished OK",
			want: &model.Event{Time: t1, Job: "backup", Kind: model.End, Host: "db1", Result: model.Success, HasExitCode: true, Reason: "maintenance"}},
		{name: "groups win over fixed fields", pats: []Pattern{fixedAll},
			line: "2026-11-30T10:00:40.5Z backup finished OK job=backup2 status=failure exit=3",
			want: &model.Event{Time: t1, Job: "backup2", Kind: model.End, Host: "db1", Result: model.Failure, ExitCode: 3, HasExitCode: true, Reason: "maintenance"}},
		{name: "first matching pattern wins", pats: []Pattern{
			{Regex: `^(?P<time>\S+) (?P<job>\S+) done`, Event: "end", Status: "success"},
			{Regex: `^(?P<time>\S+) (?P<job>\S+) do`, Event: "end", Status: "failure"}},
			line: "2026-11-30T10:00:40.5Z stats done",
			want: &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Success}},
		{name: "later pattern when the first does not match", pats: []Pattern{
			{Regex: `^(?P<time>\S+) (?P<job>\S+) done`, Event: "end", Status: "success"},
			{Regex: `^(?P<time>\S+) (?P<job>\S+) failed`, Event: "end", Status: "failure"}},
			line: "2026-11-30T10:00:40.5Z stats failed",
			want: &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Failure}},
		{name: "case-insensitive pattern", pats: []Pattern{{Regex: `(?i)^(?P<time>\S+) (?P<job>\w+) STARTED`, Event: "start"}},
			line: "2026-11-30T10:00:00.123Z stats started", want: &minEv},
		{name: "matched line with bad job", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=1stats start", err: `job: "1stats" must match`},
		{name: "matched line with bad time", pats: []Pattern{specPattern}, opts: spec,
			line: "2026/11/30 19:00:00 [stats] previous run still running, skipping", err: "does not match layout"},
		{name: "matched line with bad event", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats begin", err: `event: must be start, end, skip or lock_lost, got "begin"`},
		{name: "matched end without status", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats end", err: "status is required"},
		{name: "matched line with bad pid", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats start pid=12x", err: `pid: not an integer: "12x"`},
		{name: "matched line with bad duration", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats end status=success took=-1s", err: `duration_seconds: negative`},
		{name: "matched line with long host", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats start host=" + long(256), err: `host: longer than 255 bytes`},
		{name: "matched line with invalid UTF-8", pats: []Pattern{allGroups},
			line: "2026-11-30T10:00:00.123Z job=stats start host=a\xff", err: "invalid UTF-8"},
		{name: "matched line with NUL", pats: []Pattern{specPattern}, opts: spec,
			line: "2026-11-30 19:00:00.010 \x00 [stats] previous run still running, skipping", err: "NUL byte"},
		{name: "unmatched binary line", pats: []Pattern{specPattern}, opts: spec, line: "\x00\xff\xfe garbage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewRegex(tc.pats, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil && tc.err == "" {
				var ev model.Event
				if err := p.Parse([]byte(tc.line), &ev); !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Parse(%q) = %v, %s; want ErrNoMatch", tc.line, err, formatEvent(ev))
				}
				return
			}
			checkCase(t, p, tc.line, tc.want, tc.err)
		})
	}
}

func TestNewRegexErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		pat  Pattern
		err  string
	}{
		{"bad regex", Pattern{Regex: `(?P<time>`, Event: "start", Job: "a"}, "patterns[0]: regex: error parsing regexp"},
		{"unknown group", Pattern{Regex: `(?P<time>\S+) (?P<user>\S+)`, Event: "start", Job: "a"}, `unknown group "user"`},
		{"no time group", Pattern{Regex: `(?P<job>\S+)`, Event: "start"}, "(?P<time>...) group is required"},
		{"no job", Pattern{Regex: `(?P<time>\S+)`, Event: "start"}, "needs a (?P<job>...) group or a job"},
		{"no event", Pattern{Regex: `(?P<time>\S+)`, Job: "a"}, "needs an (?P<event>...) group or an event"},
		{"bad fixed event", Pattern{Regex: `(?P<time>\S+)`, Job: "a", Event: "stop"}, `event must be start, end, skip or lock_lost, got "stop"`},
		{"bad fixed status", Pattern{Regex: `(?P<time>\S+)`, Job: "a", Event: "end", Status: "lost"}, `status must be success, failure, timeout or skipped`},
		{"bad fixed job", Pattern{Regex: `(?P<time>\S+)`, Job: "1a", Event: "end"}, `job "1a" must match`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRegex([]Pattern{tc.pat}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("NewRegex = %v, want error containing %q", err, tc.err)
			}
		})
	}
}

func TestRequiredLiteral(t *testing.T) {
	for _, tc := range []struct{ re, want string }{
		{specPattern.Regex, "] previous run still running, skipping"},
		{`^(?P<time>\S+) backup (finished|failed)`, " backup "},
		{`(?i)^(?P<time>\S+) backup finished`, ""},
		{`^(?P<time>\S+) (?:backup finished)?`, ""},
		{`^(?P<time>\S+) (?:job done)+`, "job done"},
		{`^(?P<time>\S+) x{2,3}yz`, "yz"},
		{`^(?P<time>\S+) \x{FFFD}\x{FFFD}`, ""},
		{`^(?P<time>\S+)`, ""},
	} {
		if got := string(requiredLiteral(tc.re)); got != tc.want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tc.re, got, tc.want)
		}
	}
}

// The parsed time of the spec example: 19:00 in Shanghai is 11:00 UTC.
func TestRegexSpecTime(t *testing.T) {
	p, err := NewRegex([]Pattern{specPattern}, Options{TimeFormat: "2006-01-02 15:04:05.000", Location: shanghai})
	if err != nil {
		t.Fatal(err)
	}
	var ev model.Event
	if err := p.Parse([]byte("2026-11-30 19:00:00.010 [stats] previous run still running, skipping"), &ev); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 30, 11, 0, 0, 10e6, time.UTC); !ev.Time.Equal(want) {
		t.Errorf("time = %s, want %s", ev.Time, want)
	}
}
