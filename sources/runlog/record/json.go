package record

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/model"
)

// jsonParser reads one flat JSON object per line. Values may be strings,
// numbers, true, false or null; an object or array as a value (even under
// an unknown key) is an error, so is anything after the closing brace.
type jsonParser struct {
	core
}

// NewJSON returns the parser of format json.
func NewJSON(o Options) Parser {
	return &jsonParser{core: newCore(o)}
}

func (p *jsonParser) Parse(line []byte, ev *model.Event) error {
	*ev = model.Event{}
	p.vals = [nFields]value{}
	if err := p.scan(line); err != nil {
		return err
	}
	return p.finish(ev)
}

func jsonErr(i int, msg string) error {
	return fmt.Errorf("record: json: offset %d: %s", i, msg)
}

func skipWS(s []byte, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// scan checks the syntax of the object in s and records the raw values of
// the known keys; a repeated key overwrites the earlier value.
func (p *jsonParser) scan(s []byte) error {
	i := skipWS(s, 0)
	if i == len(s) {
		return ErrEmpty
	}
	if !utf8.Valid(s) {
		return fmt.Errorf("record: invalid UTF-8")
	}
	if s[i] != '{' {
		return jsonErr(i, "expected '{'")
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		var err error
		if i, err = p.scanMembers(s, i); err != nil {
			return err
		}
	}
	if i = skipWS(s, i); i != len(s) {
		return jsonErr(i, "data after the object")
	}
	return nil
}

// scanMembers scans the key-value pairs of a non-empty object from s[i]
// and its closing brace; it returns the index after the brace.
func (p *jsonParser) scanMembers(s []byte, i int) (int, error) {
	var unread value // the value of a key jobwatch does not read
	for {
		f, known, next, err := p.scanKey(s, i)
		if err != nil {
			return next, err
		}
		dst := &unread
		if known {
			dst = &p.vals[f]
		}
		// A string or a number, mostly: scanned here, without a call.
		switch c := s[next]; {
		case c == '"':
			end, esc, err := scanString(s, next+1)
			if err != nil {
				return next, err
			}
			*dst = value{b: s[next+1 : end], kind: vString, esc: esc}
			i = end + 1
		case c == '-' || c >= '0' && c <= '9':
			end, err := scanNumber(s, next)
			if err != nil {
				return next, err
			}
			*dst = value{b: s[next:end], kind: vNumber}
			i = end
		default:
			if i, err = scanLiteral(s, next, dst); err != nil {
				return i, err
			}
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return i, jsonErr(i, "truncated")
		}
		if s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if s[i] != '}' {
			return i, jsonErr(i, "expected ',' or '}'")
		}
		return i + 1, nil
	}
}

// scanKey scans a key and its colon from s[i]; it returns the key's field
// (known is false for a key jobwatch does not read) and the index of the
// value, which is not past the end.
func (p *jsonParser) scanKey(s []byte, i int) (f field, known bool, next int, err error) {
	if i >= len(s) {
		return 0, false, i, jsonErr(i, "truncated")
	}
	if s[i] != '"' {
		return 0, false, i, jsonErr(i, "expected a string key")
	}
	end, esc, err := scanString(s, i+1)
	if err != nil {
		return 0, false, i, err
	}
	key := s[i+1 : end]
	if esc {
		p.scratch = unescape(p.scratch[:0], key)
		key = p.scratch
	}
	f, known = lookupField(key)
	i = end + 1
	if i < len(s) && s[i] != ':' { // not the usual "key":value
		i = skipWS(s, i)
	}
	if i >= len(s) {
		return 0, false, i, jsonErr(i, "truncated")
	}
	if s[i] != ':' {
		return 0, false, i, jsonErr(i, "expected ':'")
	}
	i++
	if i < len(s) && s[i] > ' ' {
		return f, known, i, nil
	}
	if i = skipWS(s, i); i >= len(s) {
		return 0, false, i, jsonErr(i, "truncated")
	}
	return f, known, i, nil
}

// scanLiteral scans true, false or null at s[i] into dst.
func scanLiteral(s []byte, i int, dst *value) (int, error) {
	var end int
	var err error
	switch s[i] {
	case 't':
		end, err = literal(s, i, "true")
		*dst = value{b: s[i:end], kind: vBool}
	case 'f':
		end, err = literal(s, i, "false")
		*dst = value{b: s[i:end], kind: vBool}
	case 'n':
		end, err = literal(s, i, "null")
		*dst = value{kind: vNull}
	case '{', '[':
		return i, jsonErr(i, "nested object or array as a value")
	default:
		return i, jsonErr(i, "expected a value")
	}
	return end, err
}

func literal(s []byte, i int, lit string) (int, error) {
	if len(s)-i < len(lit) || string(s[i:i+len(lit)]) != lit {
		return i, jsonErr(i, "expected a value")
	}
	return i + len(lit), nil
}

// scanString scans a JSON string whose opening quote is before s[i]; it
// returns the index of the closing quote and whether there are escapes.
// Raw control characters are errors; s is known to be valid UTF-8.
func scanString(s []byte, i int) (end int, esc bool, err error) {
	for i < len(s) {
		// Skip plain bytes fast; stop at a quote, a backslash or a control character.
		for i < len(s) && !strSpecial[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"':
			return i, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(s) {
				return 0, false, jsonErr(i, "truncated string")
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(s)-i < 6 {
					return 0, false, jsonErr(i, "truncated string")
				}
				if _, ok := hex4(s[i+2 : i+6]); !ok {
					return 0, false, jsonErr(i, "bad \\u escape")
				}
				i += 6
			default:
				return 0, false, jsonErr(i, "bad escape")
			}
		default:
			return 0, false, jsonErr(i, "control character in string")
		}
	}
	return 0, false, jsonErr(i, "truncated string")
}

// strSpecial marks the bytes that end a run of plain string bytes.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// scanNumber checks the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from s[i]; it returns the
// index after the number.
func scanNumber(s []byte, i int) (int, error) {
	start := i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return 0, jsonErr(start, "bad number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return 0, jsonErr(start, "bad number")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return 0, jsonErr(start, "bad number")
		}
	}
	return i, nil
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape appends the decoded form of the string body s, already checked
// by scanString, to dst. A lone surrogate becomes U+FFFD, as encoding/json
// does. The result is never longer than s.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xdc00 && len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
					r2, _ := hex4(s[i+2 : i+6])
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // " \ /
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}
