package record

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/internal/jobname"
	"github.com/jobwatch/jobwatch/model"
)

// regexParser finds job records in application logs: the first pattern that
// matches a line makes the event; a line no pattern matches is ErrNoMatch.
type regexParser struct {
	core
	pats []pattern
}

type pattern struct {
	re *regexp.Regexp
	// group is the submatch index of each field's named group; 0: none.
	group [nFields]int
	// fixed holds the pattern's fixed value of each field; nil: none.
	fixed [nFields][]byte
	// lit is a literal every match contains; lines without it are skipped
	// without running the regexp. nil: none found.
	lit []byte
}

// NewRegex returns the parser of format regex. Each pattern needs a time
// group, a job (group or fixed) and an event (group or fixed).
func NewRegex(patterns []Pattern, o Options) (Parser, error) {
	if len(patterns) == 0 {
		return nil, errors.New("record: format regex needs at least one pattern")
	}
	p := &regexParser{core: newCore(o)}
	for i, cp := range patterns {
		pat, err := compilePattern(cp)
		if err != nil {
			return nil, fmt.Errorf("record: patterns[%d]: %w", i, err)
		}
		p.pats = append(p.pats, pat)
		if cp.Reason != "" {
			p.core.declareSkipReason(cp.Reason)
		}
	}
	return p, nil
}

func compilePattern(cp Pattern) (pattern, error) {
	var pat pattern
	re, err := regexp.Compile(cp.Regex)
	if err != nil {
		return pat, fmt.Errorf("regex: %w", err)
	}
	pat.re = re
	for idx, name := range re.SubexpNames() {
		if idx == 0 || name == "" {
			continue
		}
		f, ok := lookupField([]byte(name))
		if !ok {
			return pat, fmt.Errorf("regex: unknown group %q (known: %v)", name, PatternGroups)
		}
		pat.group[f] = idx
	}
	fixed := []struct {
		f field
		v string
	}{{fJob, cp.Job}, {fEvent, cp.Event}, {fStatus, cp.Status}, {fReason, cp.Reason}, {fHost, cp.Host}}
	for _, x := range fixed {
		if x.v != "" {
			pat.fixed[x.f] = []byte(x.v)
		}
	}
	if cp.ExitCode != nil {
		pat.fixed[fExitCode] = []byte(strconv.Itoa(*cp.ExitCode))
	}
	switch {
	case pat.group[fTime] == 0:
		return pat, errors.New("regex: a (?P<time>...) group is required")
	case pat.group[fJob] == 0 && cp.Job == "":
		return pat, errors.New("needs a (?P<job>...) group or a job")
	case pat.group[fEvent] == 0 && cp.Event == "":
		return pat, errors.New("needs an (?P<event>...) group or an event")
	case cp.Job != "" && !validJob([]byte(cp.Job)):
		return pat, fmt.Errorf("job %q must match %s", cp.Job, jobname.Pattern)
	}
	if _, ok := model.ParseKind(cp.Event); cp.Event != "" && !ok {
		return pat, fmt.Errorf("event must be start, end, skip or lock_lost, got %q", cp.Event)
	}
	if _, ok := model.ParseStatus(cp.Status); cp.Status != "" && !ok {
		return pat, fmt.Errorf("status must be success, failure, timeout or skipped, got %q", cp.Status)
	}
	pat.lit = requiredLiteral(cp.Regex)
	return pat, nil
}

// requiredLiteral returns the longest case-sensitive literal that every
// match of expr contains, or nil.
func requiredLiteral(expr string) []byte {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var best []rune
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			// A literal U+FFFD also matches an invalid byte, which
			// bytes.Contains would not find.
			if r.Flags&syntax.FoldCase == 0 && len(r.Rune) > len(best) && !slices.Contains(r.Rune, utf8.RuneError) {
				best = r.Rune
			}
		case syntax.OpConcat:
			for _, s := range r.Sub {
				walk(s)
			}
		case syntax.OpCapture, syntax.OpPlus:
			walk(r.Sub[0])
		case syntax.OpRepeat:
			if r.Min >= 1 {
				walk(r.Sub[0])
			}
		}
	}
	walk(re.Simplify())
	if len(best) < 2 {
		return nil
	}
	return []byte(string(best))
}

func (p *regexParser) Parse(line []byte, ev *model.Event) error {
	*ev = model.Event{}
	for i := range p.pats {
		pat := &p.pats[i]
		if pat.lit != nil && !bytes.Contains(line, pat.lit) {
			continue
		}
		m := pat.re.FindSubmatchIndex(line)
		if m == nil {
			continue
		}
		if !utf8.Valid(line) {
			return fmt.Errorf("record: invalid UTF-8")
		}
		if bytes.IndexByte(line, 0) >= 0 {
			return fmt.Errorf("record: NUL byte in line")
		}
		for f := range nFields {
			v := value{}
			if g := pat.group[f]; g > 0 && m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				v = value{b: line[m[2*g]:m[2*g+1]], kind: vText}
			} else if pat.fixed[f] != nil {
				v = value{b: pat.fixed[f], kind: vText}
			}
			p.vals[f] = v
		}
		return p.finish(ev)
	}
	return ErrNoMatch
}
