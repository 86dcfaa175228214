package wrapper

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// The records are encoded by hand, byte for byte as json.Marshal encodes
// them (TestRecordJSON and FuzzRecordJSON compare the two): the reflection
// json.Marshal does on a struct's first use costs a tenth of a millisecond,
// which every jobwatch run would pay twice.

// jsonRecord is a record that encodes itself.
type jsonRecord interface {
	appendJSON(b []byte) []byte
}

var (
	_ jsonRecord = startRecord{}
	_ jsonRecord = endRecord{}
	_ jsonRecord = skipRecord{}
	_ jsonRecord = lockLostRecord{}
)

// marshalRecord encodes rec as json.Marshal does.
func marshalRecord(rec any) ([]byte, error) {
	if e, ok := rec.(endRecord); ok && !finite(e.Duration) {
		return json.Marshal(rec) // the error json.Marshal reports
	}
	if s, ok := rec.(startRecord); ok && !finite(s.LockTTL) {
		return json.Marshal(rec)
	}
	if r, ok := rec.(jsonRecord); ok {
		return r.appendJSON(make([]byte, 0, 256)), nil
	}
	return json.Marshal(rec)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// jsonHead appends the keys every record starts with.
func jsonHead(b []byte, time, job, event, host string, pid int) []byte {
	b = jsonKey(b, "{", "time", time)
	b = jsonKey(b, ",", "job", job)
	b = jsonKey(b, ",", "event", event)
	b = jsonKey(b, ",", "host", host)
	b = append(b, `,"pid":`...)
	return strconv.AppendInt(b, int64(pid), 10)
}

func jsonKey(b []byte, sep, key, v string) []byte {
	b = append(b, sep...)
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	return jsonString(b, v)
}

func (r startRecord) appendJSON(b []byte) []byte {
	b = jsonHead(b, r.Time, r.Job, r.Event, r.Host, r.PID)
	b = jsonKey(b, ",", "run_id", r.RunID)
	if r.Lock != "" {
		b = jsonKey(b, ",", "lock", r.Lock)
	}
	if r.LockTTL != 0 {
		b = append(b, `,"lock_ttl_seconds":`...)
		b = jsonFloat(b, r.LockTTL)
	}
	return append(b, '}')
}

func (r endRecord) appendJSON(b []byte) []byte {
	b = jsonHead(b, r.Time, r.Job, r.Event, r.Host, r.PID)
	b = jsonKey(b, ",", "run_id", r.RunID)
	b = jsonKey(b, ",", "status", r.Status)
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(r.ExitCode), 10)
	b = append(b, `,"duration_seconds":`...)
	b = jsonFloat(b, r.Duration)
	if r.Reason != "" {
		b = jsonKey(b, ",", "reason", r.Reason)
	}
	return append(b, '}')
}

func (r skipRecord) appendJSON(b []byte) []byte {
	b = jsonHead(b, r.Time, r.Job, r.Event, r.Host, r.PID)
	b = jsonKey(b, ",", "reason", r.Reason)
	b = jsonKey(b, ",", "lock", r.Lock)
	if r.HolderPID != 0 {
		b = append(b, `,"holder_pid":`...)
		b = strconv.AppendInt(b, int64(r.HolderPID), 10)
	}
	if r.Holder != "" {
		b = jsonKey(b, ",", "holder", r.Holder)
	}
	return append(b, '}')
}

func (r lockLostRecord) appendJSON(b []byte) []byte {
	b = jsonHead(b, r.Time, r.Job, r.Event, r.Host, r.PID)
	b = jsonKey(b, ",", "run_id", r.RunID)
	b = jsonKey(b, ",", "lock", r.Lock)
	b = jsonKey(b, ",", "reason", r.Reason)
	if r.Holder != "" {
		b = jsonKey(b, ",", "holder", r.Holder)
	}
	return append(b, '}')
}

// jsonString appends s quoted. Printable ASCII other than the characters
// json.Marshal escapes (", \, <, >, &) is copied; anything else goes
// through json.Marshal, so escapes and invalid UTF-8 come out as it writes
// them.
func jsonString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonFloat appends f as json.Marshal does for the values a duration takes
// (finite, 0 or from 1e-6 to 1e21 in magnitude, where it uses the 'f'
// format); others go through json.Marshal.
func jsonFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); f == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	q, _ := json.Marshal(f) // finite: marshalRecord checked
	return append(b, q...)
}
