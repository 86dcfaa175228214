package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// systemd message catalog IDs of unit lifecycle entries, from systemd's
// src/systemd/sd-messages.h (explained in catalog/systemd.catalog.in). The
// service manager logs them with UNIT= (the unit), INVOCATION_ID= (one run
// of it) and the fields named below.
const (
	// SD_MESSAGE_UNIT_STARTING: "Starting <unit>...", a start job begins; JOB_TYPE=start.
	msgUnitStarting = "7d4958e842da4a758f6c1cdc7b36dcc5"
	// SD_MESSAGE_UNIT_STARTED (39f53479d3a045ac8e11786248231fbf, "Started"
	// or "Finished" when a start job is done) is not read: a run starts at
	// STARTING and ends with the entries below.
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
	"_HOSTNAME,_PID,_TRANSPORT,_SYSTEMD_UNIT,_SYSTEMD_INVOCATION_ID,SYSLOG_IDENTIFIER,MESSAGE"

// jfield is one journal field as journalctl --output=json prints it: a
// string; null when the value is too large to print (ok is false); an array
// of byte values when it is not valid UTF-8; an array of those when the entry
// holds the field more than once (the first value is kept). The value
// aliases the line when it needed no unescaping: decoding an entry does not
// allocate, and what outlives the line (a cursor, a host, a run id) is
// copied by the reader.
type jfield struct {
	b  []byte
	ok bool
}

// String returns a copy of the value.
func (f jfield) String() string { return string(f.b) }

// is reports whether the value is s, without allocating.
func (f jfield) is(s string) bool { return string(f.b) == s }

// journalEntry holds the fields of an entry that jobwatch reads.
type journalEntry struct {
	Cursor              jfield // __CURSOR
	Realtime            jfield // __REALTIME_TIMESTAMP
	MessageID           jfield // MESSAGE_ID
	Unit                jfield // UNIT
	InvocationID        jfield // INVOCATION_ID
	JobType             jfield // JOB_TYPE
	JobResult           jfield // JOB_RESULT
	ExitCode            jfield // EXIT_CODE
	ExitStatus          jfield // EXIT_STATUS
	UnitResult          jfield // UNIT_RESULT
	Hostname            jfield // _HOSTNAME
	PID                 jfield // _PID
	Transport           jfield // _TRANSPORT
	SystemdUnit         jfield // _SYSTEMD_UNIT
	SystemdInvocationID jfield // _SYSTEMD_INVOCATION_ID
	SyslogIdentifier    jfield // SYSLOG_IDENTIFIER
	Message             jfield // MESSAGE

	rt int64 // __REALTIME_TIMESTAMP, µs since the epoch
}

func (e *journalEntry) field(name []byte) *jfield {
	switch string(name) { // no allocation: the compiler special-cases this
	case "__CURSOR":
		return &e.Cursor
	case "__REALTIME_TIMESTAMP":
		return &e.Realtime
	case "MESSAGE_ID":
		return &e.MessageID
	case "UNIT":
		return &e.Unit
	case "INVOCATION_ID":
		return &e.InvocationID
	case "JOB_TYPE":
		return &e.JobType
	case "JOB_RESULT":
		return &e.JobResult
	case "EXIT_CODE":
		return &e.ExitCode
	case "EXIT_STATUS":
		return &e.ExitStatus
	case "UNIT_RESULT":
		return &e.UnitResult
	case "_HOSTNAME":
		return &e.Hostname
	case "_PID":
		return &e.PID
	case "_TRANSPORT":
		return &e.Transport
	case "_SYSTEMD_UNIT":
		return &e.SystemdUnit
	case "_SYSTEMD_INVOCATION_ID":
		return &e.SystemdInvocationID
	case "SYSLOG_IDENTIFIER":
		return &e.SyslogIdentifier
	case "MESSAGE":
		return &e.Message
	}
	return nil
}

var (
	errNoCursor   = errors.New("entry has no __CURSOR")
	errNoRealtime = errors.New("entry has no valid __REALTIME_TIMESTAMP")
	errSyntax     = errors.New("malformed journal JSON")
)

// decodeJournalEntry decodes one line of journalctl --output=json: an object
// whose values are strings, null, or arrays (of byte values, or of several
// values). It is a small parser of just that shape, several times faster than
// encoding/json, which it falls back on for strings with escapes. An entry
// without a cursor or a valid realtime timestamp is an error.
func decodeJournalEntry(line []byte, e *journalEntry) error {
	*e = journalEntry{}
	d := jdec{b: line}
	d.ws()
	if !d.eat('{') {
		return errSyntax
	}
	d.ws()
	if !d.eat('}') {
		for {
			d.ws()
			key, ok := d.str()
			if !ok {
				return errSyntax
			}
			d.ws()
			if !d.eat(':') {
				return errSyntax
			}
			d.ws()
			f := e.field(key)
			var v jfield
			if !d.value(&v, f != nil, 0) {
				return errSyntax
			}
			if f != nil && !f.ok {
				*f = v
			}
			d.ws()
			if d.eat(',') {
				continue
			}
			if d.eat('}') {
				break
			}
			return errSyntax
		}
	}
	d.ws()
	if d.i != len(d.b) {
		return errSyntax
	}
	if !e.Cursor.ok || len(e.Cursor.b) == 0 {
		return errNoCursor
	}
	rt, ok := atoi(e.Realtime.b)
	if !e.Realtime.ok || !ok || rt <= 0 {
		return errNoRealtime
	}
	e.rt = rt
	return nil
}

// atoi parses a decimal integer as strconv.ParseInt(s, 10, 64) does (an
// optional sign, digits, no overflow), without converting b to a string.
func atoi(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > 1<<63 || (!neg && n > 1<<63-1) {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// atoiInt is atoi for values read as an int (strconv.Atoi).
func atoiInt(b []byte) (int, bool) {
	n, ok := atoi(b)
	if !ok || int64(int(n)) != n {
		return 0, false
	}
	return int(n), true
}

type jdec struct {
	b []byte
	i int
}

func (d *jdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jdec) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a JSON string and returns its contents. Without escapes the
// result aliases the line.
func (d *jdec) str() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start := d.i
	// Fast path: most strings hold neither escapes nor control
	// characters, and the closing quote is the first quote.
	if q := bytes.IndexByte(d.b[start:], '"'); q >= 0 {
		raw := d.b[start : start+q]
		if bytes.IndexByte(raw, '\\') < 0 && !hasControl(raw) {
			d.i = start + q + 1
			return raw, true
		}
	}
	escaped := false
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			raw := d.b[start:d.i]
			d.i++
			if !escaped {
				return raw, true
			}
			var s string
			if err := json.Unmarshal(d.b[start-1:d.i], &s); err != nil {
				return nil, false
			}
			return []byte(s), true
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			return nil, false
		default:
			d.i++
		}
	}
	return nil, false
}

// hasControl reports whether b holds a byte JSON does not allow unescaped
// in a string.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// value reads a field value into v (when keep) and reports whether it was
// well-formed: a string, null, or an array of byte values or of values.
func (d *jdec) value(v *jfield, keep bool, depth int) bool {
	if d.i >= len(d.b) || depth > 2 {
		return false
	}
	switch d.b[d.i] {
	case '"':
		s, ok := d.str()
		if ok && keep {
			*v = jfield{b: s, ok: true}
		}
		return ok
	case 'n':
		if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
			d.i += 4
			*v = jfield{}
			return true
		}
		return false
	case '[':
		d.i++
		return d.array(v, keep, depth)
	}
	return false
}

// array reads the rest of an array after its '[': empty, of values (the
// field held several times), or of byte values.
func (d *jdec) array(v *jfield, keep bool, depth int) bool {
	d.ws()
	if d.eat(']') {
		if keep {
			*v = jfield{b: []byte{}, ok: true}
		}
		return true
	}
	if d.i < len(d.b) && (d.b[d.i] == '"' || d.b[d.i] == '[' || d.b[d.i] == 'n') {
		return d.values(v, keep, depth)
	}
	return d.byteValues(v, keep)
}

// values reads the rest of an array of values, keeping the first.
func (d *jdec) values(v *jfield, keep bool, depth int) bool {
	for n := 0; ; n++ {
		var item jfield
		if !d.value(&item, keep && n == 0, depth+1) {
			return false
		}
		if n == 0 && keep {
			*v = item
		}
		d.ws()
		if d.eat(']') {
			return true
		}
		if !d.eat(',') {
			return false
		}
		d.ws()
	}
}

// byteValues reads the rest of an array of byte values, a value that is
// not valid UTF-8; invalid sequences are kept as U+FFFD.
func (d *jdec) byteValues(v *jfield, keep bool) bool {
	var buf []byte
	for {
		n, ok := d.byteValue()
		if !ok {
			return false
		}
		if keep {
			buf = append(buf, n)
		}
		d.ws()
		if d.eat(']') {
			break
		}
		if !d.eat(',') {
			return false
		}
		d.ws()
	}
	if keep {
		if !utf8.Valid(buf) {
			buf = bytes.ToValidUTF8(buf, []byte("\uFFFD"))
		}
		*v = jfield{b: buf, ok: true}
	}
	return true
}

// byteValue reads a number from 0 to 255.
func (d *jdec) byteValue() (byte, bool) {
	n, digits := 0, 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		n = n*10 + int(d.b[d.i]-'0')
		d.i++
		digits++
		if n > 255 {
			return 0, false
		}
	}
	return byte(n), digits > 0 && digits <= 3
}
