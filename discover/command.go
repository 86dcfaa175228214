package discover

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/internal/runcmd"
)

// Command is what discover reads from a job's command line: the wrappers
// around the real command (flock, timeout, nice, ionice, jobwatch run) and
// the real command itself.
type Command struct {
	// Core is the command with wrappers, redirections and the shell's
	// quoting removed, words joined by one space and segments by " ; ": two
	// jobs with the same Core run the same thing.
	Core string
	// Name is the base name of the last segment's program that is not a
	// test (for run-parts, of its directory), extension removed: the job
	// name discover proposes.
	Name string
	// RunParts is the directory when the command is run-parts DIR.
	RunParts string

	Lock         string // flock FILE or jobwatch-run (jobwatch run) --lock FILE
	LockBlocking bool   // flock without -n, --nonblock or -w
	Timeout      time.Duration
	// Run is set when the command runs under jobwatch run, with its --job
	// and --log values.
	Run    bool
	RunJob string
	RunLog string
}

// token is a shell word, or an operator when op is set.
type token struct {
	s  string
	op bool
}

// shellWords splits a command line roughly as sh does: quotes and
// backslashes are honoured, the operators && || ; | & ( ) separate words.
// Expansions are left as they are. It stays one function, as long as sh's
// grammar of words: one case a character sh treats specially.
func shellWords(s string) []token {
	var out []token
	var b strings.Builder
	in := false // a word is being built
	flush := func() {
		if in {
			out = append(out, token{s: b.String()})
			b.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				b.WriteString(s[i+1:])
				i = len(s)
				break
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '(' || c == '`':
			// A command substitution stays inside its word.
			in = true
			j := substitutionEnd(s, i)
			b.WriteString(s[i:j])
			i = j - 1
		case c == '#' && !in:
			flush()
			return out
		case c == '&' || c == '|' || c == ';' || c == '(' || c == ')':
			// 2>&1 and >&2 are redirections, not operators.
			if c == '&' && i > 0 && (s[i-1] == '>' || s[i-1] == '<') {
				in = true
				b.WriteByte(c)
				break
			}
			flush()
			op := string(c)
			if (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c {
				op += string(c)
				i++
			}
			out = append(out, token{s: op, op: true})
		default:
			in = true
			b.WriteByte(c)
		}
	}
	flush()
	return out
}

// substitutionEnd returns the index just after the $(...) or `...` that
// starts at i, or len(s) when it is not closed.
func substitutionEnd(s string, i int) int {
	if s[i] == '`' {
		if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
			return i + j + 2
		}
		return len(s)
	}
	depth := 0
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

// redirRE is a redirection word: [n]> [n]>> [n]< &> [n]>&m, with or without
// its target attached.
var redirRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d*(>>|>|<|>&|<&)|&>>?)(.*)$`) })

// segments splits tokens at operators into simple commands, drops
// redirections, assignments before the program and the subshell parens.
func segments(toks []token) [][]string {
	var segs [][]string
	var cur []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.op {
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur = nil
			continue
		}
		if m := redirRE().FindStringSubmatch(t.s); m != nil {
			if m[3] == "" && i+1 < len(toks) && !toks[i+1].op {
				i++ // the target is the next word
			}
			continue
		}
		if len(cur) == 0 && (isAssignment(t.s) || shKeywords[t.s]) || t.s == "}" {
			continue // assignments before the program, { list; }, ! and if ...; then ...; fi
		}
		cur = append(cur, t.s)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// shKeywords are the reserved words of sh that may start a simple command
// of a cron line: they are not programs, and name no job.
var shKeywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "elif": true, "else": true, "fi": true,
	"while": true, "until": true, "do": true, "done": true}

var assignRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

func isAssignment(s string) bool { return assignRE().MatchString(s) }

// ParseCommand reads a job's command line.
func ParseCommand(line string) Command { return parseCommand(line, nil) }

// parseCommand reads a command line; resolve, if set, turns each
// program's name into the path it runs, so that "db-dump" found through
// PATH and "/usr/local/bin/db-dump" compare equal in Core.
func parseCommand(line string, resolve func(string) string) Command {
	var c Command
	segs := segments(shellWords(line))
	cores := make([]string, 0, len(segs))
	for _, seg := range segs {
		words := c.unwrap(seg, 0)
		if len(words) == 0 {
			continue
		}
		if !isTest(filepath.Base(words[0])) || c.Name == "" {
			c.Name = programName(words) // a test names the job only when nothing else does
		}
		c.RunParts = runPartsDir(words)
		if resolve != nil {
			words = append([]string{resolve(words[0])}, words[1:]...)
		}
		cores = append(cores, strings.Join(words, " "))
	}
	c.Core = strings.Join(cores, " ; ")
	return c
}

// isTest reports a program that only tests: test, [, true, false, :.
func isTest(prog string) bool {
	switch prog {
	case "test", "[", "true", "false", ":":
		return true
	}
	return false
}

// runPartsDir is DIR of run-parts [options] DIR, or "".
func runPartsDir(words []string) string {
	if filepath.Base(words[0]) != "run-parts" {
		return ""
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") {
			return w
		}
	}
	return ""
}

// programName is the job name a command suggests.
func programName(words []string) string {
	if d := runPartsDir(words); d != "" {
		return filepath.Base(d)
	}
	base := filepath.Base(words[0])
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// unwrap strips the wrappers at the start of one simple command, noting
// their lock and timeout.
func (c *Command) unwrap(w []string, depth int) []string {
	for len(w) > 0 && depth < 16 {
		depth++
		switch filepath.Base(w[0]) {
		case "flock":
			w = c.flock(w[1:], depth)
		case "timeout":
			w = c.timeout(w[1:])
		case "nice":
			w = skipOptions(w[1:], map[string]bool{"-n": true, "--adjustment": true})
		case "ionice":
			w = skipOptions(w[1:], map[string]bool{"-c": true, "-n": true, "--class": true, "--classdata": true})
		case "jobwatch":
			if len(w) < 2 || w[1] != "run" {
				return w
			}
			w = c.jobwatchRun(w[2:])
		case "jobwatch-run":
			w = c.jobwatchRun(w[1:])
		default:
			return w
		}
	}
	return w
}

// skipOptions drops leading options (nice -10 among them); withArg names
// those taking a value as the next word. A "--" ends the options.
func skipOptions(w []string, withArg map[string]bool) []string {
	for len(w) > 0 && strings.HasPrefix(w[0], "-") && w[0] != "-" {
		o := w[0]
		w = w[1:]
		if o == "--" {
			break
		}
		if withArg[o] && len(w) > 0 {
			w = w[1:]
		}
	}
	return w
}

func (c *Command) flock(w []string, depth int) []string {
	blocking := true
	for len(w) > 0 && strings.HasPrefix(w[0], "-") && w[0] != "-" {
		o := w[0]
		w = w[1:]
		if o == "--" {
			break
		}
		switch {
		case o == "-n" || o == "--nonblock" || o == "--nb":
			blocking = false
		case o == "-w" || o == "--timeout" || o == "--wait":
			blocking = false
			if len(w) > 0 {
				w = w[1:]
			}
		case strings.HasPrefix(o, "--timeout=") || strings.HasPrefix(o, "--wait="):
			blocking = false
		case o == "-E" || o == "--conflict-exit-code":
			if len(w) > 0 {
				w = w[1:]
			}
		case strings.HasPrefix(o, "--"):
		default:
			// clustered short options: -xn, -nw5, -E1
			for i := 1; i < len(o); i++ {
				switch o[i] {
				case 'n':
					blocking = false
				case 'w':
					blocking = false
					if i == len(o)-1 && len(w) > 0 {
						w = w[1:]
					}
					i = len(o)
				case 'E':
					if i == len(o)-1 && len(w) > 0 {
						w = w[1:]
					}
					i = len(o)
				}
			}
		}
	}
	if len(w) == 0 {
		return nil
	}
	c.Lock = w[0]
	c.LockBlocking = blocking
	w = w[1:]
	if len(w) >= 2 && (w[0] == "-c" || w[0] == "--command") {
		var out []string
		for _, seg := range segments(shellWords(w[1])) {
			out = append(out, c.unwrap(seg, depth)...)
		}
		return out
	}
	return w
}

func (c *Command) timeout(w []string) []string {
	for len(w) > 0 && strings.HasPrefix(w[0], "-") {
		o := w[0]
		w = w[1:]
		if o == "--" {
			break
		}
		if (o == "-s" || o == "-k" || o == "--signal" || o == "--kill-after") && len(w) > 0 {
			w = w[1:]
		}
	}
	if len(w) == 0 {
		return nil
	}
	if d, ok := timeoutDuration(w[0]); ok && d > 0 && (c.Timeout == 0 || d < c.Timeout) {
		c.Timeout = d
	}
	return w[1:]
}

// timeoutDuration reads timeout(1)'s duration: a number with an optional
// s, m, h or d suffix.
func timeoutDuration(s string) (time.Duration, bool) {
	mult := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, mult = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1e9 {
		return 0, false
	}
	return time.Duration(f * float64(mult)), true
}

// jobwatchRun reads jobwatch run's flags (wrapper.RunFlagTable).
func (c *Command) jobwatchRun(w []string) []string {
	c.Run = true
	for len(w) > 0 && strings.HasPrefix(w[0], "--") {
		o := w[0]
		w = w[1:]
		if o == "--" {
			break
		}
		// Every flag of jobwatch run takes a value (wrapper's
		// TestEveryRunFlagTakesAValue): one without "=" is followed by it,
		// read here or not.
		name, val, hasVal := strings.Cut(o, "=")
		if !hasVal {
			if len(w) == 0 {
				break
			}
			val, w = w[0], w[1:]
		}
		switch name {
		case "--job":
			c.RunJob = val
		case "--log":
			c.RunLog = val
		case "--lock":
			c.Lock = val
			c.LockBlocking = false
		case "--timeout":
			if d, err := runcmd.ParseDuration(val); err == nil && d > 0 && (c.Timeout == 0 || d < c.Timeout) {
				c.Timeout = d
			}
		}
	}
	return w
}
