package journal

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/jobwatch/jobwatch/sources"
)

// Lines in the shapes journalctl --output=json prints: plain strings, null for
// values too large to print, byte arrays for non-UTF-8 values, arrays for
// fields present more than once.
var journalSeeds = []string{
	`{"__CURSOR":"s=2bddadd7b7bc423cbea554edb820a79d;i=1;b=7ea7256dece043a798e423b70f53c0f8;m=861c46800;t=6617b790c8800;x=9974ad5064f9c601","__REALTIME_TIMESTAMP":"1796032800000000","__MONOTONIC_TIMESTAMP":"36000000000","_BOOT_ID":"7ea7256dece043a798e423b70f53c0f8","MESSAGE_ID":"7d4958e842da4a758f6c1cdc7b36dcc5","UNIT":"stats.service","INVOCATION_ID":"6b84904df46b6ce78f72ed27473643af","JOB_TYPE":"start","_HOSTNAME":"web1","_PID":"1","MESSAGE":"Starting stats.service - Job stats..."}`,
	`{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1796032801000000","_SYSTEMD_UNIT":"stats.service","_SYSTEMD_INVOCATION_ID":"6b84904df46b6ce78f72ed27473643af","_PID":"4242","MESSAGE":null}`,
	`{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1796032802000000","MESSAGE_ID":"98e322203f7a4ed290d09fe03c09fe15","UNIT":"stats.service","INVOCATION_ID":"6b84904df46b6ce78f72ed27473643af","EXIT_CODE":"exited","EXIT_STATUS":"2"}`,
	`{"__CURSOR":"c4","__REALTIME_TIMESTAMP":"1796032802000000","MESSAGE_ID":["d9b373ed55a64feb8242e02dbe79a49c","x"],"UNIT":"stats.service","INVOCATION_ID":"6b84904df46b6ce78f72ed27473643af","UNIT_RESULT":"timeout"}`,
	`{"__CURSOR":"c5","__REALTIME_TIMESTAMP":"1796032803000000","SYSLOG_IDENTIFIER":"CRON","_PID":"5000","_HOSTNAME":"web1","MESSAGE":[40,114,111,111,116,41,32,67,77,68,32,40,115,116,97,116,115,41]}`,
	`{"__CURSOR":"c6","__REALTIME_TIMESTAMP":"1796032804000000","SYSLOG_IDENTIFIER":"CRON","_PID":"5000","MESSAGE":"(root) END (stats)"}`,
	// cron at -L 15 (the job's PID inside), -L 7 (the error naming it), the daemon's start
	`{"__CURSOR":"c61","__REALTIME_TIMESTAMP":"1796032804000000","SYSLOG_IDENTIFIER":"CRON","_PID":"5001","_HOSTNAME":"web1","MESSAGE":"(root) CMD ([5002] stats)"}`,
	`{"__CURSOR":"c62","__REALTIME_TIMESTAMP":"1796032804000000","SYSLOG_IDENTIFIER":"CRON","_PID":"5001","_HOSTNAME":"web1","MESSAGE":"(CRON) error (grandchild #5002 failed with exit status 3)"}`,
	`{"__CURSOR":"c63","__REALTIME_TIMESTAMP":"1796032804000000","SYSLOG_IDENTIFIER":"CRON","_PID":"5001","_HOSTNAME":"web1","MESSAGE":"(root) END ([5002] stats)"}`,
	`{"__CURSOR":"c64","__REALTIME_TIMESTAMP":"1796032804000000","SYSLOG_IDENTIFIER":"cron","_PID":"400","_HOSTNAME":"web1","MESSAGE":"(CRON) INFO (pidfile fd = 5)"}`,
	`{"__CURSOR":"c7","__REALTIME_TIMESTAMP":"x","UNIT":[[1,2],null]}`,
	`{"__CURSOR":null}`,
	`{"MESSAGE":[300]}`,
	`[1,2,3]`,
	`{"__CURSOR":"c8","__REALTIME_TIMESTAMP":"1","MESSAGE_ID":{"a":1},"UNIT":true}`,
	`{"__CURSOR":"c9","__REALTIME_TIMESTAMP":"99999999999999999999999"}`,
	`not json`,
	``,
}

// FuzzJournalEntry feeds arbitrary lines to the decoder and to the reader
// that applies them: neither may panic, and an entry either decodes or is
// counted as a parse error.
func FuzzJournalEntry(f *testing.F) {
	for _, s := range journalSeeds {
		f.Add([]byte(s))
	}
	name := "fuzz"
	src := Config{Units: map[string]string{"stats.service": "stats"}, Cron: []CronMatch{{Match: "stats", Job: "stats"}}}
	j, err := New(name, src, sources.Deps{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var e journalEntry
		err := decodeJournalEntry(line, &e)
		if err == nil && (len(e.Cursor.b) == 0 || e.rt <= 0) {
			t.Fatalf("decoded an entry without cursor or time: %+v", e)
		}
		sink := &jSink{}
		r := j.newReader(nil, sink)
		r.line(line)
		r.line(line) // the same entry twice: no second start or end
		r.flush(false)
		jEvs := sink.events()
		if len(jEvs) > 2 {
			t.Fatalf("one entry gave %d events", len(jEvs))
		}
		if pe, _ := sink.totals(); (err != nil) != (pe > 0) && len(line) > 0 && len(bytes.TrimSpace(line)) > 0 {
			t.Fatalf("decode error %v but %d parse errors", err, pe)
		}
	})
}

func TestJournalFieldDecoding(t *testing.T) {
	tests := []struct {
		name, json string
		want       string
		ok         bool
		err        bool
	}{
		{"string", `"abc"`, "abc", true, false},
		{"string with escapes", `"a\"b\\c\u00e9\n"`, "a\"b\\c\u00e9\n", true, false},
		{"null: too large to print", `null`, "", false, false},
		{"bytes: not UTF-8", `[40,255,41]`, "(\uFFFD)", true, false},
		{"bytes: UTF-8 with control characters", `[97, 1 ,98]`, "a\x01b", true, false},
		{"several values: the first", `["one","two"]`, "one", true, false},
		{"several binary values", `[[104,105],"two"]`, "hi", true, false},
		{"empty array", `[]`, "", true, false},
		{"byte out of range", `[256]`, "", false, true},
		{"number", `12`, "", false, true},
		{"object", `{"a":"b"}`, "", false, true},
		{"unterminated", `"abc`, "", false, true},
		{"control character in string", "\"a\x01\"", "", false, true},
		{"nested too deep", `[[[[1]]]]`, "", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := `{"__CURSOR":"c","__REALTIME_TIMESTAMP":"1", "MESSAGE" : ` + tc.json + `}`
			var e journalEntry
			err := decodeJournalEntry([]byte(line), &e)
			f := e.Message
			if (err != nil) != tc.err || (err == nil && (f.String() != tc.want || f.ok != tc.ok)) {
				t.Errorf("got %q ok=%v err=%v; want %q ok=%v err=%v", f.String(), f.ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}

func TestJournalEntryDecoding(t *testing.T) {
	for i, s := range journalSeeds {
		var e journalEntry
		err := decodeJournalEntry([]byte(s), &e)
		var m map[string]json.RawMessage
		if jerr := json.Unmarshal([]byte(s), &m); jerr != nil {
			if err == nil {
				t.Errorf("seed %d: invalid JSON decoded", i)
			}
			continue
		}
		if err != nil {
			continue
		}
		var cursor string
		if json.Unmarshal(m["__CURSOR"], &cursor) == nil && cursor != e.Cursor.String() {
			t.Errorf("seed %d: cursor %q, want %q", i, e.Cursor.String(), cursor)
		}
	}
	var e journalEntry
	if err := decodeJournalEntry([]byte(journalSeeds[4]), &e); err != nil || !e.Message.is("(root) CMD (stats)") || !e.PID.is("5000") {
		t.Errorf("cron seed: %+v, %v", e, err)
	}
}
