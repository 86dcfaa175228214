package discover

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// unitDirs are the system unit directories, highest precedence first
// (systemd.unit(5)): a unit in /etc hides the same name below.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// setting is one assignment in a unit file.
type setting struct {
	Value string
	File  string // path on the host
	Line  int
}

// unit is a unit file with its drop-ins applied: for each "Section.Key",
// the assignments in effect, an empty assignment having reset the list.
type unit struct {
	Name string
	File string // the main file, path on the host
	vals map[string][]setting
}

// last returns the assignment in effect for a single-valued key.
func (u *unit) last(key string) (setting, bool) {
	v := u.vals[key]
	if len(v) == 0 {
		return setting{}, false
	}
	return v[len(v)-1], true
}

// parseUnitFile reads an INI-style unit file into u: sections, Key=Value,
// # and ; comments, lines continued with a trailing backslash, a leading
// byte order mark.
func parseUnitFile(u *unit, data []byte, file string) {
	// systemd skips a UTF-8 byte order mark, as editors on Windows write.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	section := ""
	n := 0
	for sc.Scan() {
		n++
		start := n
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, "\\") && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(sc.Text())
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := section + "." + strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		if v == "" {
			u.vals[key] = nil // an empty assignment resets
			continue
		}
		u.vals[key] = append(u.vals[key], setting{Value: v, File: file, Line: start})
	}
}

// systemd reads the unit files of a tree.
type systemd struct {
	root     string
	problems []Finding
}

// readUnit loads a unit by name with its drop-ins (NAME.d/*.conf in every
// unit directory, a drop-in in a higher directory hiding the same file name
// below, applied in file-name order), falling back to the template
// (foo@.service for foo@bar.service). It returns nil when no unit file
// exists; masked (a link to /dev/null) units are reported as masked.
func (s *systemd) readUnit(name string) (u *unit, masked bool) {
	u = &unit{Name: name, vals: map[string][]setting{}}
	names := []string{name}
	if at := strings.IndexByte(name, '@'); at >= 0 {
		if dot := strings.LastIndexByte(name, '.'); dot > at+1 {
			names = append(names, name[:at+1]+name[dot:])
		}
	}
	found, masked := s.readUnitFile(u, names)
	if !found {
		return nil, masked
	}
	dropins := s.dropins(names)
	files := make([]string, 0, len(dropins))
	for f := range dropins {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if data, ok := readNoting(s.root, dropins[f], &s.problems); ok {
			parseUnitFile(u, data, dropins[f])
		}
	}
	return u, false
}

// readUnitFile reads into u the first unit file of names (the unit's own,
// then its template's) in the unit directories.
func (s *systemd) readUnitFile(u *unit, names []string) (found, masked bool) {
	for _, n := range names {
		for _, dir := range unitDirs {
			p := path.Join(dir, n)
			if isDevNull(s.root, p) {
				return false, true
			}
			data, ok := readNoting(s.root, p, &s.problems)
			if !ok {
				continue
			}
			u.File = p
			parseUnitFile(u, data, p)
			return true, false
		}
	}
	return false, false
}

// dropins returns the drop-ins of names by file name, each the path of
// the first unit directory that has it.
func (s *systemd) dropins(names []string) map[string]string {
	dropins := map[string]string{}
	for _, n := range names {
		for _, dir := range unitDirs {
			d := path.Join(dir, n+".d")
			ents, err := readDir(s.root, d)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if strings.HasSuffix(e, ".conf") {
					if _, ok := dropins[e]; !ok {
						dropins[e] = path.Join(d, e)
					}
				}
			}
		}
	}
	return dropins
}

// timerNames lists every .timer unit name that exists in a unit directory
// or is pulled in by a .wants or .requires link, sorted, with whether
// it is enabled (linked from a .wants or .requires directory).
func (s *systemd) timerNames() (names []string, enabled map[string]bool) {
	seen := map[string]bool{}
	enabled = map[string]bool{}
	for _, dir := range unitDirs {
		ents, err := readDir(s.root, dir)
		if err != nil {
			if !os.IsNotExist(err) {
				s.problems = append(s.problems, unreadable(dir, err))
			}
			continue
		}
		for _, e := range ents {
			switch {
			case strings.HasSuffix(e, ".timer") && !strings.HasSuffix(e, "@.timer"):
				seen[e] = true
			case strings.HasSuffix(e, ".wants") || strings.HasSuffix(e, ".requires"):
				links, _ := readDir(s.root, path.Join(dir, e))
				for _, l := range links {
					if strings.HasSuffix(l, ".timer") {
						seen[l] = true
						enabled[l] = true
					}
				}
			}
		}
	}
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, enabled
}

// timespanUnits are the units of systemd's time spans, in nanoseconds.
var timespanUnits = []struct {
	names []string
	d     float64
}{
	{[]string{"usec", "us", "µs"}, float64(time.Microsecond)},
	{[]string{"msec", "ms"}, float64(time.Millisecond)},
	{[]string{"seconds", "second", "sec", "s"}, float64(time.Second)},
	{[]string{"minutes", "minute", "min", "m"}, float64(time.Minute)},
	{[]string{"hours", "hour", "hr", "h"}, float64(time.Hour)},
	{[]string{"days", "day", "d"}, float64(24 * time.Hour)},
	{[]string{"weeks", "week", "w"}, float64(7 * 24 * time.Hour)},
	{[]string{"months", "month", "M"}, 30.44 * float64(24*time.Hour)},
	{[]string{"years", "year", "y"}, 365.25 * float64(24*time.Hour)},
}

// parseTimespan reads a systemd time span (systemd.time(7)): numbers with
// units ("1h 30min", "500ms", "2d"), a bare number being seconds, or
// "infinity" (ok, with inf set).
func parseTimespan(s string) (d time.Duration, inf bool, err error) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return 0, true, nil
	}
	if s == "" {
		return 0, false, fmt.Errorf("empty time span")
	}
	var total float64
	rest := s
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t")
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, false, fmt.Errorf("time span %q: expected a number at %q", s, rest)
		}
		n, perr := strconv.ParseFloat(rest[:i], 64)
		if perr != nil {
			return 0, false, fmt.Errorf("time span %q: %w", s, perr)
		}
		rest = strings.TrimLeft(rest[i:], " \t")
		j := 0
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9') && rest[j] != ' ' && rest[j] != '\t' {
			j++
		}
		word := rest[:j]
		rest = rest[j:]
		mult := -1.0
		if word == "" {
			mult = float64(time.Second)
		}
		for _, u := range timespanUnits {
			for _, name := range u.names {
				if word == name {
					mult = u.d
				}
			}
		}
		if mult < 0 {
			return 0, false, fmt.Errorf("time span %q: unknown unit %q", s, word)
		}
		total += n * mult
	}
	if total > math.MaxInt64 {
		return 0, true, nil
	}
	return time.Duration(total), false, nil
}
