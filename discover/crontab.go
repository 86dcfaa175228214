package discover

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// LineKind says what a crontab line is.
type LineKind uint8

// Kinds of crontab lines.
const (
	LineBlank LineKind = iota // empty or a comment
	LineEnv                   // NAME=VALUE
	LineJob                   // a schedule, a user (system crontabs) and a command
)

// CronLine is one parsed crontab line.
type CronLine struct {
	Kind LineKind
	// Env lines.
	Name, Value string
	// Job lines. Schedule is the five fields joined by one space, or the
	// @-shortcut; Reboot is set for @reboot, which has no schedule.
	Schedule string
	Reboot   bool
	User     string // system crontabs only
	// Command is the command as cron runs it: up to the first unescaped %,
	// with \% turned into %. Stdin is the text after that %, which cron
	// feeds to the command with each further % turned into a newline.
	Command string
	Stdin   string
	// Percent is set when the command holds an unescaped %: a date +%F
	// meant for the command that cron cuts off instead.
	Percent bool
}

// envRE is cron's env line (env.c load_env): a name, optional blanks, '='
// and a value, optionally quoted. A job line never matches: its first field
// is followed by a blank and another field, not by '='.
var envRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*("[^"]*"|'[^']*'|[^\s="']+)\s*=\s*(.*?)\s*$`) })

// ParseCronLine parses one crontab line as cron reads it. system is set
// for /etc/crontab and /etc/cron.d files, whose job lines carry a user
// name after the schedule. A job line that cron would reject is an error
// saying why; @reboot lines are returned with Reboot set.
func ParseCronLine(line string, system bool) (CronLine, error) {
	s := strings.TrimLeft(line, " \t")
	s = strings.TrimRight(s, "\r\n")
	if s == "" || strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
		return CronLine{Kind: LineBlank}, nil
	}
	if m := envRE().FindStringSubmatch(s); m != nil {
		name, value := unquote(m[1]), unquote(m[2])
		if name == "" {
			return CronLine{}, errors.New("environment line with an empty name")
		}
		return CronLine{Kind: LineEnv, Name: name, Value: value}, nil
	}
	l := CronLine{Kind: LineJob}
	var fields []string
	rest := s
	want := 5
	if strings.HasPrefix(s, "@") {
		want = 1
	}
	for len(fields) < want {
		f, r := nextField(rest)
		if f == "" {
			return l, fmt.Errorf("want %d schedule fields and a command, got %d fields", want, len(fields))
		}
		fields = append(fields, f)
		rest = r
	}
	l.Schedule = strings.Join(fields, " ")
	if fields[0] == "@reboot" { // cron knows its shortcuts in lower case only
		l.Reboot = true
	} else if _, err := cronSchedule(l.Schedule, time.UTC); err != nil {
		return l, err // names the schedule: schedule: "61 * * * *": ...
	}
	if system {
		u, r := nextField(rest)
		if u == "" {
			return l, errors.New("no user name after the schedule (lines of /etc/crontab and /etc/cron.d name the user to run as)")
		}
		l.User, rest = u, r
	}
	cmd := strings.TrimLeft(rest, " \t")
	if strings.TrimSpace(cmd) == "" {
		return l, errors.New("no command")
	}
	l.Command, l.Stdin, l.Percent = splitPercent(cmd)
	if strings.TrimSpace(l.Command) == "" {
		return l, errors.New("no command before the first unescaped %")
	}
	return l, nil
}

// nextField returns the first blank-separated field of s and the rest.
func nextField(s string) (string, string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// splitPercent applies cron's % rule (do_command.c): the first unescaped %
// ends the command; the rest is stdin with each unescaped % a newline; \%
// stands for %.
func splitPercent(cmd string) (command, stdin string, percent bool) {
	var b strings.Builder
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		if c == '\\' && i+1 < len(cmd) && cmd[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if c == '%' {
			percent = true
			command = b.String()
			b.Reset()
			for j := i + 1; j < len(cmd); j++ {
				switch {
				case cmd[j] == '\\' && j+1 < len(cmd) && cmd[j+1] == '%':
					b.WriteByte('%')
					j++
				case cmd[j] == '%':
					b.WriteByte('\n')
				default:
					b.WriteByte(cmd[j])
				}
			}
			return strings.TrimRight(command, " \t"), b.String(), true
		}
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), " \t"), "", false
}

// Flavour is the cron daemon whose rules apply: which spool directory holds
// user crontabs and which /etc/cron.d file names are read.
type Flavour string

// Cron daemons.
const (
	Debian Flavour = "debian" // Debian's and Ubuntu's cron (vixie cron with patches)
	Cronie Flavour = "cronie" // Fedora, RHEL, Arch, SUSE
)

// debianName is what Debian cron reads in /etc/cron.d: names made only of
// letters, digits, underscores and hyphens, as run-parts(8) accepts them.
var debianName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// cronIgnores says why cron does not read a file of /etc/cron.d or of its
// spool, or "" when it reads it.
func cronIgnores(f Flavour, name string) string {
	if f == Debian {
		if !debianName().MatchString(name) {
			return "Debian cron reads only file names of letters, digits, '_' and '-' (run-parts rules), so a name with a dot or '~' is ignored"
		}
		return ""
	}
	// cronie's database.c not_a_crontab().
	switch {
	case strings.HasPrefix(name, "."):
		return "cronie ignores names starting with a dot"
	case strings.HasSuffix(name, "~"):
		return "cronie ignores names ending with '~'"
	}
	for _, suf := range []string{".rpmsave", ".rpmorig", ".rpmnew"} {
		if strings.HasSuffix(name, suf) {
			return "cronie ignores package manager leftovers (" + suf + ")"
		}
	}
	return ""
}
