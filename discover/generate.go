package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/runcmd"
)

// GenerateOptions shape the generated config.
type GenerateOptions struct {
	// RunLog is the run log of jobwatch run lines without --log;
	// runcmd.DefaultLog when empty.
	RunLog string
	// Merge is the text of an existing config: its jobs and sources are
	// kept, and only the jobs it does not watch yet are added.
	Merge []byte
	// JSON writes the config as JSON (which YAML readers, jobwatch's among
	// them, accept) instead of commented YAML.
	JSON bool
	// JoinJournal puts the units and cron matches of the jobs Merge adds
	// into a journal source of the config that reads the same journal,
	// rather than into a second source reading it (host mode: HostConfig).
	JoinJournal bool
}

// The source types discover writes, as jobwatch.yml spells them.
const (
	typeJournal = "journal"
	typeRunLog  = "runlog"
)

// Source names discover gives the sources it adds.
const (
	JournalSource = "journal"
	RunLogSource  = "runs"
)

// value is a node of the generated document: a scalar, a list or an
// ordered map, with an optional comment.
type value struct {
	scalar  *string
	quoted  bool
	boolean bool // a scalar true or false, not a string
	integer bool // a scalar number, not a string
	list    []value
	isList  bool
	keys    []string
	vals    []value
	comment string
}

func str(s string) value    { return value{scalar: &s} }
func quoted(s string) value { return value{scalar: &s, quoted: true} }
func boolean(b bool) value {
	s := strconv.FormatBool(b)
	return value{scalar: &s, boolean: true}
}
func integer(n int) value {
	s := strconv.Itoa(n)
	return value{scalar: &s, integer: true}
}
func newMap() *value { return &value{keys: []string{}} }
func (v *value) set(k string, x value) {
	v.keys = append(v.keys, k)
	v.vals = append(v.vals, x)
}

func (v value) node() *yaml.Node {
	var n *yaml.Node
	switch {
	case v.scalar != nil:
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *v.scalar}
		if v.boolean {
			n.Tag = "!!bool"
		}
		if v.integer {
			n.Tag = "!!int"
		}
		if v.quoted {
			n.Style = yaml.DoubleQuotedStyle
		}
	case v.isList:
		n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, x := range v.list {
			n.Content = append(n.Content, x.node())
		}
	default:
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i, k := range v.keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v.vals[i].node())
		}
	}
	n.HeadComment = commentText(v.comment)
	return n
}

// commentText is s as a YAML comment can hold it: invalid UTF-8 and the
// characters yaml rejects or reads as a line break (but \n, which starts the
// next comment line) become '?'.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || yamlUnprintable(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

// yamlUnprintable reports a character at or above 0x20 that YAML does not
// allow in a document (DEL, C1 controls, the BOM, non-characters) or reads as
// a line break (U+2028, U+2029). JSON may hold them raw, but jobwatch reads
// JSON configs with its YAML parser.
func yamlUnprintable(r rune) bool {
	return r >= 0x7f && r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff ||
		r >= 0xd800 && r < 0xe000 || r == 0xfffe || r == 0xffff
}

// jsonString is s as a JSON string that YAML reads too: what json.Marshal
// leaves raw but YAML rejects is escaped.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	if !strings.ContainsFunc(string(b), yamlUnprintable) {
		return b
	}
	var out bytes.Buffer
	for _, r := range string(b) {
		if yamlUnprintable(r) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return out.Bytes()
}

func (v value) MarshalJSON() ([]byte, error) {
	switch {
	case v.scalar != nil && (v.boolean || v.integer):
		return []byte(*v.scalar), nil
	case v.scalar != nil:
		return jsonString(*v.scalar), nil
	case v.isList:
		if v.list == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(v.list)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range v.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := v.vals[i].MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// duration writes d as config reads it (Go duration syntax).
// durations: "1h", "2h40m", "90s" rather than Go's "1h0m0s".
func duration(d time.Duration) value { return str(fmtDuration(d)) }

func fmtDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// jobValue is the config entry of a discovered job.
func jobValue(j *Job) value {
	m := newMap()
	m.set("name", str(j.Name))
	switch {
	case j.Schedule != "":
		// Cron skips the bytes after a number that are not letters or
		// digits ("0\xb0" is minute 0), and so does schedule: U+FFFD for
		// a byte that is not UTF-8 reads the same and YAML can hold it.
		m.set("schedule", quoted(strings.ToValidUTF8(j.Schedule, "\uFFFD")))
	case len(j.OnCalendar) == 1:
		m.set("on_calendar", quoted(j.OnCalendar[0]))
	case len(j.OnCalendar) > 1:
		l := value{isList: true}
		for _, e := range j.OnCalendar {
			l.list = append(l.list, quoted(e))
		}
		m.set("on_calendar", l)
	default:
		m.set("every", duration(j.Every))
	}
	if j.Timezone != "" && j.Every == 0 {
		m.set("timezone", str(j.Timezone))
	}
	if g := j.Grace(); g > 0 {
		m.set("grace", duration(g))
	}
	if j.Timeout > 0 {
		m.set("timeout", duration(j.Timeout))
	}
	if j.Persistent && len(j.OnCalendar) > 0 {
		m.set("persistent", boolean(true))
	}
	if l := jobLabels(j); l != nil {
		m.set("labels", *l)
	}
	what := "cron line"
	if j.Origin == "timer" {
		what = j.Timer
	}
	m.comment = fmt.Sprintf("%s (%s)", j.Where(), what)
	if j.User != "" {
		m.comment = fmt.Sprintf("%s (%s, user %s)", j.Where(), what, j.User)
	}
	return *m
}

// Label names of a discovered job's labels (docs/discover.md): the user
// a cron line runs as, the timer unit that starts a timer's service.
const (
	LabelUser = "user"
	LabelUnit = "unit"
)

// jobLabels are the labels of a discovered job (nil: none), which its
// alerts carry: the host's users and units are few, and the config is
// where they are read from.
func jobLabels(j *Job) *value {
	m := newMap()
	switch {
	case j.Origin == "timer" && j.Timer != "":
		m.set(LabelUnit, str(strings.ToValidUTF8(j.Timer, "\uFFFD")))
	case j.User != "":
		m.set(LabelUser, str(strings.ToValidUTF8(j.User, "\uFFFD")))
	}
	if len(m.keys) == 0 {
		return nil
	}
	return m
}

// watchKind says which source sees a job's runs.
func watchKind(h *Host, j *Job) string {
	switch {
	case j.Origin == "timer":
		// The journal source matches UNIT= of a service exactly.
		if strings.HasSuffix(j.Service, ".service") && !strings.ContainsAny(j.Service, " /+=") && utf8.ValidString(j.Service) {
			return "unit"
		}
	case j.Cmd.Run:
		if utf8.ValidString(j.Cmd.RunLog) {
			return "runlog"
		}
	case h.Systemd && h.Flavour == Debian && utf8.ValidString(j.CommandLine):
		// The journal source reads Debian's cron (SYSLOG_IDENTIFIER=CRON);
		// cronie logs as CROND.
		return "cron"
	}
	return ""
}

// cronMatch is the journal source's regular expression for a cron line's
// command as the cron daemon logs it in its CMD line.
func cronMatch(j *Job) string { return "^" + regexp.QuoteMeta(j.CommandLine) + "$" }

// sourcesFor builds the sources that see the runs of jobs.
func sourcesFor(h *Host, jobs []*Job, o GenerateOptions, taken map[string]bool) []value {
	units := newMap()
	cron := value{isList: true}
	logs := map[string][]string{}
	for _, j := range jobs {
		switch watchKind(h, j) {
		case "unit":
			units.set(j.Service, str(j.Name))
		case "cron":
			m := newMap()
			m.set("match", quoted(cronMatch(j)))
			m.set("job", str(j.Name))
			cron.list = append(cron.list, *m)
		case "runlog":
			p := runLogOf(j, o)
			logs[p] = append(logs[p], j.Name)
		}
	}
	var out []value
	name := func(base string) string {
		n := base
		for k := 2; taken[n]; k++ {
			n = fmt.Sprintf("%s-%d", base, k)
		}
		taken[n] = true
		return n
	}
	if len(units.keys) > 0 || len(cron.list) > 0 {
		out = append(out, journalSource(h, name(JournalSource), units, cron))
	}
	paths := make([]string, 0, len(logs))
	for p := range logs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		s := newMap()
		s.set("name", str(name(RunLogSource)))
		s.set("type", str(typeRunLog))
		s.set("path", str(p))
		s.set("format", str("json"))
		s.comment = "Written by jobwatch run for: " + strings.Join(logs[p], ", ")
		out = append(out, *s)
	}
	return out
}

// runLogOf is the run log a job under jobwatch run writes to.
func runLogOf(j *Job, o GenerateOptions) string {
	p := j.Cmd.RunLog
	if p == "" {
		p = o.RunLog
	}
	if p == "" {
		p = runcmd.DefaultLog
	}
	return p
}

// journalSource is the journal source named name that sees the services
// of units and the cron lines of cron.
func journalSource(h *Host, name string, units *value, cron value) value {
	s := newMap()
	s.set("name", str(name))
	s.set("type", str(typeJournal))
	if h.Root != "/" && h.Root != "" && exists(h.Root, "/var/log/journal") {
		s.set("directory", str(hostPath(h.Root, "/var/log/journal")))
	}
	if len(units.keys) > 0 {
		s.set("units", *units)
	}
	if len(cron.list) > 0 {
		s.set("cron", cron)
		s.set("cron_log_level", integer(h.CronLogLevel))
	}
	s.comment = "The timers' services by unit."
	if len(cron.list) > 0 {
		s.comment = "The timers' services by unit; cron lines by the command the cron daemon logs, at the\n-L of /etc/default/cron (cron_log_level: -L 1, Debian's default, logs starts only: results\nare unknown; -L 15 logs every end, failure and exit code)."
	}
	return *s
}

// Generate writes the jobwatch.yml that watches the host's jobs.
func Generate(h *Host, o GenerateOptions) ([]byte, error) {
	if len(o.Merge) > 0 {
		return merge(h, o)
	}
	if len(h.Jobs) == 0 {
		return nil, errors.New("no cron jobs or timers found: nothing to watch")
	}
	doc := newMap()
	jobs := value{isList: true}
	ptrs := make([]*Job, len(h.Jobs))
	for i := range h.Jobs {
		j := &h.Jobs[i]
		ptrs[i] = j
		v := jobValue(j)
		if watchKind(h, j) == "" {
			if j.Origin == "timer" {
				v.comment += "\nNo source sees this job's runs: " + j.Service + " is not a service unit."
			} else if h.Systemd && h.Flavour == Cronie {
				v.comment += "\nNo source sees this job's runs (jobwatch reads Debian's cron log lines, not cronie's):\nwrap the command in jobwatch run."
			} else {
				v.comment += "\nNo source sees this job's runs: wrap the command in jobwatch run."
			}
		}
		jobs.list = append(jobs.list, v)
	}
	doc.set("jobs", jobs)
	doc.set("sources", value{isList: true, list: sourcesFor(h, ptrs, o, map[string]bool{})})
	doc.comment = fmt.Sprintf("Written by jobwatch discover from the cron jobs and systemd timers under %s.\nCheck it with jobwatch check-config; each job names the file and line it came from.", h.Root)
	if o.JSON {
		b, err := doc.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return nil, err
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	return encodeYAML(doc.node())
}

func encodeYAML(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// merge adds the jobs an existing config does not watch to it, with the
// sources that see them; everything already in it stays as written.
func merge(h *Host, o GenerateOptions) ([]byte, error) {
	cfg, w, doc, err := readMerged(o.Merge)
	if err != nil {
		return nil, fmt.Errorf("--merge: %w", err)
	}
	root := doc.Content[0]
	jobsNode := mapValue(root, "jobs", yaml.SequenceNode)
	srcNode := mapValue(root, "sources", yaml.SequenceNode)
	taken := map[string]bool{}
	for _, s := range cfg.Sources {
		taken[s.Name] = true
	}
	added := addUnwatched(h, cfg, w, jobsNode)
	for _, s := range sourcesFor(h, needSource(h, o, cfg, added), o, taken) {
		if n := s.node(); !o.JoinJournal || !joinJournal(srcNode, n) {
			srcNode.Content = append(srcNode.Content, n)
		}
	}
	if o.JSON {
		var v any
		if err := doc.Decode(&v); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	}
	return encodeYAML(doc)
}

// readMerged reads the config to merge into: checked as a config, then as
// what it watches and as the YAML document it is.
func readMerged(data []byte) (*shape, Watched, *yaml.Node, error) {
	if _, err := config.Parse(bytes.NewReader(data)); err != nil {
		return nil, Watched{}, nil, err
	}
	cfg, err := readShape(data)
	if err != nil {
		return nil, Watched{}, nil, err
	}
	w, err := WatchedFromYAML(data)
	if err != nil {
		return nil, Watched{}, nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Watched{}, nil, err
	}
	return cfg, w, &doc, nil
}

// addUnwatched appends the jobs the config does not watch to jobsNode,
// renamed when their name is taken, and returns them.
func addUnwatched(h *Host, cfg *shape, w Watched, jobsNode *yaml.Node) []*Job {
	names := map[string]bool{}
	for _, j := range cfg.Jobs {
		names[j.Name] = true
	}
	var added []*Job
	for i := range h.Jobs {
		j := &h.Jobs[i]
		if w.Watches(j) {
			continue
		}
		base := j.Name
		for k := 2; names[j.Name]; k++ {
			j.Name = fmt.Sprintf("%s-%d", base, k)
		}
		names[j.Name] = true
		added = append(added, j)
		v := jobValue(j)
		v.comment = "Added by jobwatch discover: " + v.comment
		jobsNode.Content = append(jobsNode.Content, v.node())
	}
	return added
}

// needSource returns the jobs added that no source of the config sees: a
// job under jobwatch run writing to a run log already read needs no new
// source.
func needSource(h *Host, o GenerateOptions, cfg *shape, added []*Job) []*Job {
	read := map[string]bool{}
	for _, s := range cfg.Sources {
		if s.Type == typeRunLog {
			read[s.Path] = true
		}
	}
	var need []*Job
	for _, j := range added {
		if watchKind(h, j) == "runlog" && read[runLogOf(j, o)] {
			continue
		}
		need = append(need, j)
	}
	return need
}

// joinJournal adds the units and cron matches of the journal source n to
// the first source of srcs that reads the same journal (the same directory,
// no files), and reports whether there was one.
func joinJournal(srcs, n *yaml.Node) bool {
	scalar := func(m *yaml.Node, key string) string {
		if v := child(m, key); v != nil {
			return v.Value
		}
		return ""
	}
	if scalar(n, "type") != typeJournal {
		return false
	}
	for _, s := range srcs.Content {
		if s.Kind != yaml.MappingNode || scalar(s, "type") != typeJournal ||
			scalar(s, "directory") != scalar(n, "directory") || child(s, "files") != nil {
			continue
		}
		for _, key := range []string{"units", "cron"} {
			if v := child(n, key); v != nil {
				dst := mapValue(s, key, v.Kind)
				dst.Content = append(dst.Content, v.Content...)
			}
		}
		return true
	}
	return false
}

// child is the value of key in the mapping m, or nil.
func child(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapValue returns the value node of key in the mapping m, adding an empty
// one of kind if missing.
func mapValue(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	if v := child(m, key); v != nil {
		if v.Kind != kind { // "sources:" with nothing after it
			*v = yaml.Node{Kind: kind}
		}
		v.Style = 0
		return v
	}
	v := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}
