package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/internal/cronlog"
	"github.com/jobwatch/jobwatch/model"
)

// checkEvent fails unless ev is an event a parser may return.
func checkEvent(t *testing.T, line []byte, ev model.Event) {
	t.Helper()
	switch {
	case ev.Kind != model.Start && ev.Kind != model.End && ev.Kind != model.Skip:
		t.Fatalf("Parse(%q): kind %d", line, ev.Kind)
	case !validJob([]byte(ev.Job)):
		t.Fatalf("Parse(%q): invalid job %q", line, ev.Job)
	case ev.Time.IsZero() || ev.Time.Location() != time.UTC:
		t.Fatalf("Parse(%q): time %v", line, ev.Time)
	case ev.Kind == model.End && ev.Result == "":
		t.Fatalf("Parse(%q): end without result", line)
	case len(ev.Host) > MaxHostLen || len(ev.RunID) > MaxRunIDLen || len(ev.Reason) > MaxReasonLen:
		t.Fatalf("Parse(%q): field too long", line)
	case !printable([]byte(ev.Host)) || !printable([]byte(ev.RunID)) || !printable([]byte(ev.Reason)):
		t.Fatalf("Parse(%q): control character in a field", line)
	case !utf8.ValidString(ev.Host) || !utf8.ValidString(ev.RunID) || !utf8.ValidString(ev.Reason):
		t.Fatalf("Parse(%q): invalid UTF-8 in a field", line)
	case ev.PID < 0 || ev.HolderPID < 0 || ev.Duration < 0:
		t.Fatalf("Parse(%q): negative pid or duration", line)
	case ev.LockTTL < 0 || ev.LockTTL > MaxLockTTL || (ev.LockTTL != 0 && ev.Kind != model.Start):
		t.Fatalf("Parse(%q): lock TTL %v on a %s", line, ev.LockTTL, ev.Kind)
	}
}

// parse runs p on line and checks what every parser promises: line is not
// modified, errors are short, events are valid.
func parse(t *testing.T, p Parser, line []byte) (model.Event, error) {
	t.Helper()
	orig := bytes.Clone(line)
	var ev model.Event
	err := p.Parse(line, &ev)
	if !bytes.Equal(line, orig) {
		t.Fatalf("Parse modified its input")
	}
	if err != nil {
		if n := len(err.Error()); n > 256 {
			t.Fatalf("Parse(%q): error of %d bytes: %v", line, n, err)
		}
		return ev, err
	}
	checkEvent(t, line, ev)
	return ev, nil
}

func seedFile(f *testing.F, name string) {
	data, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f.Add(bytes.Clone(sc.Bytes()))
	}
}

func FuzzJSON(f *testing.F) {
	seedFile(f, "testdata/json.txt")
	// The wrapper's start record with its lease, and a lease just past the bound.
	f.Add([]byte(`{"time":"2026-12-01T10:00:00.000Z","job":"j","event":"start","host":"h","pid":1,"run_id":"9f1c2e4a7b3d5e60","lock_ttl_seconds":1.5}`))
	f.Add([]byte(`{"time":"2026-12-01T10:00:00.000Z","job":"j","event":"start","lock_ttl_seconds":"31536000.0000001"}`))
	for _, tc := range ruleCases {
		f.Add([]byte(tc.json))
	}
	for _, tc := range jsonOnlyCases {
		f.Add([]byte(tc.line))
	}
	p := NewJSON(Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parse(t, p, line)
		if err != nil {
			return
		}
		// Whatever we accept, encoding/json accepts and reads the same way.
		// UseNumber: numbers out of float64's range are valid JSON.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("accepted %q, encoding/json: %v", line, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("accepted %q, encoding/json finds more after the object: %v", line, err)
		}
		if job, _ := m["job"].(string); job != ev.Job {
			t.Fatalf("%q: job %q, encoding/json %q", line, ev.Job, job)
		}
		if kind, _ := m["event"].(string); kind != ev.Kind.String() {
			t.Fatalf("%q: event %s, encoding/json %q", line, ev.Kind, kind)
		}
		pid := 0
		switch v := m["pid"].(type) {
		case nil:
		case json.Number:
			n, err := strconv.Atoi(string(v))
			if err != nil {
				t.Fatalf("%q: pid %q accepted, strconv: %v", line, v, err)
			}
			pid = n
		case string:
			if v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%q: pid %q accepted, strconv: %v", line, v, err)
				}
				pid = n
			}
		default:
			t.Fatalf("%q: pid accepted as %T", line, v)
		}
		if pid != ev.PID {
			t.Fatalf("%q: pid %d, encoding/json %d", line, ev.PID, pid)
		}
	})
}

// encodeLogfmt writes ev as a logfmt line with every string quoted.
func encodeLogfmt(ev model.Event) []byte {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("time=" + ev.Time.Format(time.RFC3339Nano) + " job=" + q(ev.Job) + " event=" + ev.Kind.String())
	if ev.Host != "" {
		b.WriteString(" host=" + q(ev.Host))
	}
	if ev.PID != 0 {
		b.WriteString(" pid=" + strconv.Itoa(ev.PID))
	}
	if ev.RunID != "" {
		b.WriteString(" run_id=" + q(ev.RunID))
	}
	if ev.Result != "" {
		b.WriteString(" status=" + string(ev.Result))
	}
	if ev.HasExitCode {
		b.WriteString(" exit_code=" + strconv.Itoa(ev.ExitCode))
	}
	if ev.HasDuration {
		b.WriteString(" duration_seconds=" + strconv.FormatFloat(ev.Duration.Seconds(), 'f', -1, 64))
	}
	if ev.Reason != "" {
		b.WriteString(" reason=" + q(ev.Reason))
	}
	if ev.HolderPID != 0 {
		b.WriteString(" holder_pid=" + strconv.Itoa(ev.HolderPID))
	}
	if ev.Lock != "" {
		b.WriteString(" lock=" + ev.Lock)
	}
	if ev.Holder != "" {
		b.WriteString(" holder=" + q(ev.Holder))
	}
	if ev.LockTTL != 0 {
		b.WriteString(" lock_ttl_seconds=" + strconv.FormatFloat(ev.LockTTL.Seconds(), 'f', -1, 64))
	}
	return []byte(b.String())
}

func FuzzLogfmt(f *testing.F) {
	seedFile(f, "testdata/logfmt.txt")
	for _, tc := range ruleCases {
		f.Add([]byte(tc.logfmt))
	}
	for _, tc := range logfmtOnlyCases {
		f.Add([]byte(tc.line))
	}
	p := NewLogfmt(Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parse(t, p, line)
		if err != nil {
			return
		}
		// An accepted event, written back as logfmt, reads the same.
		again := encodeLogfmt(ev)
		ev2, err := parse(t, p, again)
		if err != nil {
			t.Fatalf("%q parsed, its re-encoding %q: %v", line, again, err)
		}
		if d := ev2.Duration - ev.Duration; math.Abs(float64(d)) <= float64(time.Microsecond) {
			ev2.Duration = ev.Duration
		}
		if d := ev2.LockTTL - ev.LockTTL; math.Abs(float64(d)) <= float64(time.Microsecond) {
			ev2.LockTTL = ev.LockTTL
		}
		if ev2 != ev {
			t.Fatalf("%q: %s\nre-encoded %q: %s", line, formatEvent(ev), again, formatEvent(ev2))
		}
	})
}

// fuzzPatterns are the patterns of testdata/regex.yaml plus one with every group.
var fuzzPatterns = []Pattern{
	specPattern,
	{Regex: `^(?P<time>\S+ \S+) .*\[(?P<job>[\w.-]+)\] started \(pid (?P<pid>\d+)\)`, Event: "start"},
	{Regex: `^(?P<time>\S+ \S+) .*\[(?P<job>[\w.-]+)\] finished in (?P<duration_seconds>[\d.]+)s, exit (?P<exit_code>\d+)`,
		Event: "end", Status: "success"},
	allGroups,
	fixedAll,
}

func FuzzRegex(f *testing.F) {
	seedFile(f, "testdata/regex.txt")
	f.Add([]byte("2026-11-30T10:00:00.123Z job=stats start pid=4242 host=web1 run=optional"))
	f.Add([]byte("2026-11-30T10:00:40.500Z job=stats end status=success exit=0 took=40.4s pid=4242 host=web1"))
	f.Add([]byte("2026-11-30T11:00:00.010Z job=stats skip pid=4300 host=web1 reason=locked holder=4242"))
	f.Add([]byte("2026-11-30T10:00:40.5Z backup finished OK job=backup2 status=failure exit=3"))
	opts := Options{TimeFormat: "2006-01-02 15:04:05.000", Location: shanghai}
	p, err := NewRegex(fuzzPatterns, opts)
	if err != nil {
		f.Fatal(err)
	}
	// plain runs every regexp: the prefilter must never change a result.
	plainP, _ := NewRegex(fuzzPatterns, opts)
	plain := plainP.(*regexParser)
	for i := range plain.pats {
		plain.pats[i].lit = nil
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parse(t, p, line)
		ev2, err2 := parse(t, plain, line)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || ev != ev2 {
			t.Fatalf("%q: with prefilter %v %s, without %v %s", line, err, formatEvent(ev), err2, formatEvent(ev2))
		}
	})
}

var canonical = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// FuzzRFC3339 checks the fast time parser against time.Parse: every time
// time.Parse reads in RFC 3339 is read the same.
func FuzzRFC3339(f *testing.F) {
	for _, s := range []string{"2026-11-30T10:00:00.123Z", "2026-11-30T10:00:00+08:00", "2024-02-29T23:59:59.999999999-00:30",
		"2026-11-30T10:00:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-30T10:00:00.Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseRFC3339([]byte(s), time.UTC)
		want, err := time.Parse(time.RFC3339Nano, s)
		// time.Parse is laxer than RFC 3339 (one-digit hours, offset minute 60):
		// compare on the fixed-width form only.
		if err == nil && canonical.MatchString(s) && (!ok || !got.Equal(want)) {
			t.Fatalf("%q: fast %v %v, time.Parse %v", s, got, ok, want)
		}
		if ok && !strings.ContainsAny(s, "tz ") {
			// What the fast parser accepts in the canonical form is RFC
			// 3339, so time.Parse reads it too (adding Z when there is no offset).
			in := s
			if !strings.ContainsAny(s[19:], "Z+-") {
				in += "Z"
			}
			if want, err := time.Parse(time.RFC3339Nano, in); err != nil || !want.Equal(got) {
				t.Fatalf("%q accepted as %v, time.Parse(%q): %v %v", s, got, in, want, err)
			}
		}
	})
}

// FuzzCron feeds cron's syslog lines, real ones (testdata/cron) and
// mutations, one after another to one parser: what it returns is a valid
// event (of no job, for commands nothing maps), and its state stays
// bounded.
func FuzzCron(f *testing.F) {
	for _, name := range []string{"L15-traditional", "L15-default", "L7-traditional", "L3-traditional", "L1-traditional", "cronie"} {
		seedFile(f, "testdata/cron/"+name+".log")
	}
	p, err := NewCron(cronCommands, time.UTC, func() time.Time { return cronNow })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parse(t, unknownJobOK{p}, line)
		if err != nil {
			return
		}
		if ev.Kind == model.Skip || ev.RunID != "" {
			t.Fatalf("Parse(%q): %v", line, ev)
		}
		if open, failed, ended, hosts := p.match.StateSize(); max(open, failed, ended, hosts) > cronlog.MaxRuns {
			t.Fatalf("state grew past %d", cronlog.MaxRuns)
		}
	})
}

// unknownJobOK gives an event of no job (a command nothing maps) a valid
// name for checkEvent, which checks everything else.
type unknownJobOK struct{ p Parser }

func (u unknownJobOK) Parse(line []byte, ev *model.Event) error {
	err := u.p.Parse(line, ev)
	if err == nil && ev.Job == "" {
		ev.Job = "unknown"
	}
	return err
}
