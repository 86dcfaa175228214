package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// systemd message catalog IDs of unit lifecycle entries, from systemd's
// src/systemd/sd-messages.h (explained in catalog/systemd.catalog.in). The
// service manager logs them with UNIT= (the unit), INVOCATION_ID= (one run
// of it) and the fields named below.
const (
	// SD_MESSAGE_UNIT_STARTING: "Starting <unit>...", a start job begins; JOB_TYPE=start.
	msgUnitStarting = "7d4958e842da4a758f6c1cdc7b36dcc5"
	// SD_MESSAGE_UNIT_STARTED: a start job is done (JOB_RESULT=done): "Started"
	// for long-running services, "Finished" for oneshot ones.
	msgUnitStarted = "39f53479d3a045ac8e11786248231fbf"
	// SD_MESSAGE_UNIT_FAILED: a start job did not succeed; JOB_RESULT=failed,
	// timeout, dependency, ...
	msgUnitFailed = "be02cf6855d2428ba40df7e9d022f03d"
	// SD_MESSAGE_UNIT_SUCCESS: "<unit>: Deactivated successfully."
	msgUnitSuccess = "7ad2d189f7e94e70a38c781354912448"
	// SD_MESSAGE_UNIT_FAILURE_RESULT: "<unit>: Failed with result '<r>'."; UNIT_RESULT=exit-code, timeout, signal, ...
	msgUnitFailureResult = "d9b373ed55a64feb8242e02dbe79a49c"
	// SD_MESSAGE_UNIT_PROCESS_EXIT: "<unit>: Main process exited, code=..., status=...";
	// EXIT_CODE=exited|killed|dumped, EXIT_STATUS=<status or signal number>.
	msgUnitProcessExit = "98e322203f7a4ed290d09fe03c09fe15"
)

// journalOutputFields is what jobwatch asks journalctl to print
// (--output-fields); journalctl adds __CURSOR, __REALTIME_TIMESTAMP,
// __MONOTONIC_TIMESTAMP and _BOOT_ID itself.
const journalOutputFields = "MESSAGE_ID,UNIT,INVOCATION_ID,JOB_TYPE,JOB_RESULT,EXIT_CODE,EXIT_STATUS,UNIT_RESULT," +
	"_HOSTNAME,_PID,_SYSTEMD_UNIT,_SYSTEMD_INVOCATION_ID,SYSLOG_IDENTIFIER,MESSAGE"

// jfield is one journal field as journalctl --output=json prints it: a
// string; null when the value is too large to print; an array of byte values
// when it is not valid UTF-8; an array of those when the entry holds the field
// more than once (the first value is kept).
type jfield struct {
	s  string
	ok bool
}

var errFieldType = errors.New("journal field is neither string, null nor array")

func (f *jfield) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errFieldType
	}
	switch b[0] {
	case 'n':
		*f = jfield{}
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = jfield{s: s, ok: true}
		return nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return err
		}
		if len(items) == 0 {
			*f = jfield{s: "", ok: true}
			return nil
		}
		first := bytes.TrimSpace(items[0])
		if len(first) > 0 && (first[0] == '"' || first[0] == '[' || first[0] == 'n') {
			// Several values: keep the first.
			return f.UnmarshalJSON(first)
		}
		buf := make([]byte, 0, len(items))
		for _, it := range items {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(it)), 10, 8)
			if err != nil {
				return errFieldType
			}
			buf = append(buf, byte(n))
		}
		if !utf8.Valid(buf) {
			buf = bytes.ToValidUTF8(buf, []byte("\uFFFD"))
		}
		*f = jfield{s: string(buf), ok: true}
		return nil
	}
	return errFieldType
}

// journalEntry holds the fields of an entry that jobwatch reads.
type journalEntry struct {
	Cursor              jfield `json:"__CURSOR"`
	Realtime            jfield `json:"__REALTIME_TIMESTAMP"`
	MessageID           jfield `json:"MESSAGE_ID"`
	Unit                jfield `json:"UNIT"`
	InvocationID        jfield `json:"INVOCATION_ID"`
	JobType             jfield `json:"JOB_TYPE"`
	JobResult           jfield `json:"JOB_RESULT"`
	ExitCode            jfield `json:"EXIT_CODE"`
	ExitStatus          jfield `json:"EXIT_STATUS"`
	UnitResult          jfield `json:"UNIT_RESULT"`
	Hostname            jfield `json:"_HOSTNAME"`
	PID                 jfield `json:"_PID"`
	SystemdUnit         jfield `json:"_SYSTEMD_UNIT"`
	SystemdInvocationID jfield `json:"_SYSTEMD_INVOCATION_ID"`
	SyslogIdentifier    jfield `json:"SYSLOG_IDENTIFIER"`
	Message             jfield `json:"MESSAGE"`

	rt int64 // __REALTIME_TIMESTAMP, µs since the epoch
}

var (
	errNoCursor   = errors.New("entry has no __CURSOR")
	errNoRealtime = errors.New("entry has no valid __REALTIME_TIMESTAMP")
)

// decodeJournalEntry decodes one line of journalctl --output=json. An entry
// without a cursor or a valid realtime timestamp is an error.
func decodeJournalEntry(line []byte, e *journalEntry) error {
	*e = journalEntry{}
	if err := json.Unmarshal(line, e); err != nil {
		return err
	}
	if !e.Cursor.ok || e.Cursor.s == "" {
		return errNoCursor
	}
	rt, err := strconv.ParseInt(e.Realtime.s, 10, 64)
	if !e.Realtime.ok || err != nil || rt <= 0 {
		return errNoRealtime
	}
	e.rt = rt
	return nil
}
