package record

import (
	"fmt"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/model"
)

// logfmtParser reads key=value pairs separated by spaces or tabs. A value is
// bare (running to the next space) or double-quoted with JSON string escapes
// (\" \\ \/ \b \f \n \r \t \uXXXX). A key without =, or with an empty value,
// counts as absent. Control characters other than tab are errors.
type logfmtParser struct {
	core
}

// NewLogfmt returns the parser of format logfmt.
func NewLogfmt(o Options) Parser {
	return &logfmtParser{core: newCore(o)}
}

func logfmtErr(i int, msg string) error {
	return fmt.Errorf("record: logfmt: offset %d: %s", i, msg)
}

func (p *logfmtParser) Parse(line []byte, ev *model.Event) error {
	*ev = model.Event{}
	p.vals = [nFields]value{}
	if err := p.scan(line); err != nil {
		return err
	}
	return p.finish(ev)
}

func (p *logfmtParser) scan(s []byte) error {
	if !utf8.Valid(s) {
		return fmt.Errorf("record: invalid UTF-8")
	}
	pairs := 0
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && s[i] > ' ' && s[i] != '=' && s[i] != '"' {
			i++
		}
		key := s[start:i]
		if i < len(s) && s[i] < ' ' && s[i] != '\t' && s[i] != '\r' {
			return logfmtErr(i, "control character")
		}
		if len(key) == 0 {
			return logfmtErr(i, "expected a key")
		}
		var v value
		if i < len(s) && s[i] == '=' {
			i++
			if i < len(s) && s[i] == '"' {
				end, esc, err := scanString(s, i+1)
				if err != nil {
					return logfmtErr(i, "bad quoted value")
				}
				v = value{b: s[i+1 : end], kind: vString, esc: esc}
				i = end + 1
			} else {
				start := i
				for i < len(s) && s[i] > ' ' && s[i] != '"' {
					i++
				}
				v = value{b: s[start:i], kind: vText}
			}
			if i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
				if s[i] < ' ' {
					return logfmtErr(i, "control character")
				}
				return logfmtErr(i, "unexpected '\"'")
			}
		} else if i < len(s) && s[i] == '"' {
			return logfmtErr(i, "unexpected '\"'")
		}
		if f, ok := lookupField(key); ok {
			p.vals[f] = v
		}
		pairs++
	}
	if pairs == 0 {
		return ErrEmpty
	}
	return nil
}
