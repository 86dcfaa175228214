package discover

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Watched is what a config watches, as discover matches it against the
// jobs it finds: job names, the services of journal sources' units and the
// commands of their cron matches.
type Watched struct {
	Jobs  map[string]bool   // configured job names
	Units map[string]string // service unit -> configured job
	Cron  []CronWatch
}

// CronWatch is a journal source's cron match.
type CronWatch struct {
	Match *regexp.Regexp
	Job   string
}

// shape is the part of jobwatch.yml that says what is watched, in the
// documented YAML shape; other keys are ignored (config validates them).
type shape struct {
	Jobs []struct {
		Name string `yaml:"name"`
	} `yaml:"jobs"`
	Sources []struct {
		Name   string            `yaml:"name"`
		Type   string            `yaml:"type"`
		Path   string            `yaml:"path"`
		Format string            `yaml:"format"`
		Units  map[string]string `yaml:"units"`
		Cron   []struct {
			Match string `yaml:"match"`
			Job   string `yaml:"job"`
		} `yaml:"cron"`
	} `yaml:"sources"`
}

func readShape(data []byte) (*shape, error) {
	var s shape
	if err := yaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	return &s, nil
}

// WatchedFromYAML collects what a jobwatch.yml watches: its job names, its
// journal sources' units and cron matches. It reads the file's YAML, not a
// decoded config, so that it does not depend on how config represents
// each source type.
func WatchedFromYAML(data []byte) (Watched, error) {
	s, err := readShape(data)
	if err != nil {
		return Watched{}, err
	}
	w := Watched{Jobs: map[string]bool{}, Units: map[string]string{}}
	for _, j := range s.Jobs {
		w.Jobs[j.Name] = true
	}
	for _, src := range s.Sources {
		if src.Type != typeJournal {
			continue
		}
		for u, j := range src.Units {
			w.Units[u] = j
		}
		for i, m := range src.Cron {
			re, err := regexp.Compile(m.Match)
			if err != nil {
				return Watched{}, fmt.Errorf("source %q: cron[%d].match: %w", src.Name, i, err)
			}
			w.Cron = append(w.Cron, CronWatch{Match: re, Job: m.Job})
		}
	}
	return w, nil
}

// Watches reports whether a configured job watches j: one of the same
// name (or of its jobwatch run --job), a journal unit naming its service,
// or a journal cron match on its command.
func (w Watched) Watches(j *Job) bool {
	if w.Jobs[j.Name] || j.Cmd.RunJob != "" && w.Jobs[j.Cmd.RunJob] {
		return true
	}
	if j.Service != "" && w.Jobs[w.Units[j.Service]] {
		return true
	}
	if j.Origin == "cron" {
		for _, c := range w.Cron {
			if w.Jobs[c.Job] && c.Match.MatchString(j.CommandLine) {
				return true
			}
		}
	}
	return false
}

// Report is one run of discovery over a host.
type Report struct {
	Host     *Host
	Findings []Finding
	// Unwatched are the host's scheduled jobs no configured job watches.
	Unwatched []Job
	// Kept are the jobs of the read before kept for files this one could
	// not read (Host.KeepUnreadable).
	Kept int
}

// Count is the number of findings of one kind and severity.
type Count struct {
	Kind     string
	Severity Severity
	N        int
}

// Counts returns the findings counted by kind and severity: every kind
// with each severity it has been seen with, plus every kind at zero for the
// severity it is usually raised with, sorted.
func (r Report) Counts() []Count {
	type key struct {
		kind string
		sev  Severity
	}
	m := map[key]int{}
	for _, k := range Kinds {
		m[key{k, kindSeverity[k]}] = 0
	}
	for _, f := range r.Findings {
		m[key{f.Kind, f.Severity}]++
	}
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Kind: k.kind, Severity: k.sev, N: n})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Kind != out[b].Kind {
			return out[a].Kind < out[b].Kind
		}
		return out[a].Severity < out[b].Severity
	})
	return out
}

// kindSeverity is the severity each kind is usually raised with.
var kindSeverity = map[string]Severity{
	KindDuplicate: Warning, KindFlockBlocking: Warning, KindLockInTmp: Warning, KindSharedLock: Info,
	KindPersistentDense: Warning, KindAccuracy: Info, KindNoTimeout: Warning, KindNoLock: Info,
	KindDST: Info, KindCronRejected: Warning, KindUnreadable: Warning, KindIgnoredFile: Info,
	KindReboot: Info, KindTZEnv: Info, KindTimerLeftOut: Info, KindNoOp: Info, KindNotInPath: Warning, KindCronTZIgnored: Warning, KindNoSource: Info,
}

// Scan reads the host under root, checks it and matches its jobs against
// what the running config watches: what jobwatch serve exports as
// jobwatch_discovery_findings{kind,severity} and
// jobwatch_discovery_unwatched_jobs. prev, the host as the scan before read
// it (or nil), lends its jobs in files this read cannot read.
func Scan(root string, prev *Host, w Watched, o Options) (Report, error) {
	h, err := Read(root)
	if err != nil {
		return Report{}, err
	}
	kept := h.KeepUnreadable(prev)
	return Report{Host: h, Findings: Check(h, o), Unwatched: w.Unwatched(h), Kept: kept}, nil
}

// KeepUnreadable adds to h the jobs of prev, an earlier read of the same
// root, that h lost to a directory or file it could not read, and that h
// has no job of the same timer or crontab line for; it returns how many. A job is lost
// when its file, or a directory above it, is noted unreadable (its mode
// changed, replaced by something that is not a directory), or when a
// directory discovery reads that prev found gone now (renamed away, a
// mount gone, an empty root where a mount point is): its jobs are kept as
// prev found them, and the directory is noted unreadable. Host mode then
// takes neither for the jobs' removal and retires none of them.
func (h *Host) KeepUnreadable(prev *Host) int {
	if prev == nil || prev.Root != h.Root {
		return 0
	}
	l := h.losses(prev)
	present := map[string]bool{}
	for i := range h.Jobs {
		present[h.Jobs[i].key()] = true
	}
	// Each kept job goes after the job before it in prev, so that a host
	// read again as it was gives the same config (HostConfig) as before.
	after := map[string][]Job{}
	last, kept := "", 0
	for _, j := range prev.Jobs {
		k := j.key()
		if !present[k] {
			if where := l.hiding(&j); where != "" {
				after[last] = append(after[last], j)
				present[k] = true
				kept++
				l.keptIn[where] = append(l.keptIn[where], j.Name)
			}
		}
		if present[k] {
			last = k
		}
	}
	if kept == 0 {
		return 0
	}
	jobs := make([]Job, 0, len(h.Jobs)+kept)
	var add func(k string)
	add = func(k string) {
		for _, j := range after[k] {
			jobs = append(jobs, j)
			add(j.key())
		}
	}
	add("")
	for _, j := range h.Jobs {
		jobs = append(jobs, j)
		add(j.key())
	}
	h.Jobs = jobs
	// Named again with the kept ones: a job that took a kept one's name
	// (a cron job named after the program of a timer now hidden) gives
	// it back.
	h.name()
	h.standInForGone(prev, l)
	return kept
}

// key is what makes a job itself across two reads of a host, its name
// aside (names depend on the other jobs): its timer, or its crontab line.
func (j *Job) key() string {
	if j.Origin == "timer" {
		return "timer " + j.Timer
	}
	return fmt.Sprintf("cron %s:%d", j.File, j.Line)
}

// losses is what a read could not see that the read before did: the
// paths it noted unreadable, and the directories it reads that were there
// before and are gone now.
type losses struct {
	unreadable []string
	gone       []string
	keptIn     map[string][]string // a gone directory: the jobs kept for it
}

func (h *Host) losses(prev *Host) *losses {
	l := &losses{keptIn: map[string][]string{}}
	for _, n := range h.Notes {
		if n.Kind == KindUnreadable {
			l.unreadable = append(l.unreadable, n.File)
		}
	}
	for _, d := range readDirs {
		// A directory replaced by something else is noted unreadable
		// already.
		gone := !h.dirs[d] || slices.Contains(h.vanished, d)
		if prev.dirs[d] && gone && !slices.Contains(l.unreadable, d) {
			l.gone = append(l.gone, d)
		}
	}
	return l
}

// hiding is the unreadable path or gone directory that hides j, "" when
// none does. A timer's enablement is a link in a unit directory
// (timers.target.wants), so a gone unit directory hides every timer.
func (l *losses) hiding(j *Job) string {
	for _, p := range l.unreadable {
		if within(j.File, p) {
			return p
		}
	}
	for _, d := range l.gone {
		if within(j.File, d) {
			return d
		}
	}
	if j.Origin == "timer" {
		for _, d := range l.gone {
			if slices.Contains(unitDirs, d) {
				return d
			}
		}
	}
	return ""
}

// standInForGone notes each gone directory that held jobs, and keeps
// standing for it what prev read there: the directory itself (so that the
// next read, with h as its prev, keeps its jobs still), and, with /etc or a
// unit directory gone, what the host was taken for (its cron flavour, its
// zone, systemd), which the kept jobs' sources depend on.
func (h *Host) standInForGone(prev *Host, l *losses) {
	for _, d := range l.gone {
		jobs := l.keptIn[d]
		if len(jobs) == 0 {
			continue
		}
		h.dirs[d] = true
		h.Notes = append(h.Notes, Finding{File: d, Kind: KindUnreadable, Severity: Warning,
			Message: fmt.Sprintf("the directory is gone, and the last discovery found %d jobs through it (%s): they are kept as it found them until it is back", len(jobs), strings.Join(jobs, ", ")),
			Fix:     "restore it (a mount that failed, a directory renamed away); to stop watching its jobs, remove them from it, not the directory"})
		switch {
		case d == "/etc":
			h.Flavour, h.Zone = prev.Flavour, prev.Zone
			h.Systemd = h.Systemd || prev.Systemd
			h.takeHostZone()
		case slices.Contains(unitDirs, d):
			h.Systemd = h.Systemd || prev.Systemd
		}
	}
}

// takeHostZone gives the jobs read on the host's zone, which was unknown
// when they were read (/etc gone), the zone standing in for it: a user
// crontab read while /etc is away keeps its schedules' zone, as the jobs
// kept for /etc do.
func (h *Host) takeHostZone() {
	for i := range h.Jobs {
		if j := &h.Jobs[i]; j.Timezone == "" {
			j.Timezone, j.Zone = h.Zone, loadZone(h.Zone)
		}
	}
}

// within reports whether the host path file is dir or under it.
func within(file, dir string) bool {
	return file == dir || strings.HasPrefix(file, strings.TrimSuffix(dir, "/")+"/")
}

// Unwatched are the jobs of h that w does not watch, in h's order: a host
// read before can be matched again against a config that changed since
// (jobwatch serve's reload while the host cannot be read).
func (w Watched) Unwatched(h *Host) []Job {
	var out []Job
	for i := range h.Jobs {
		if !w.Watches(&h.Jobs[i]) {
			out = append(out, h.Jobs[i])
		}
	}
	return out
}

// HostConfig is the config jobwatch serve runs in host mode
// (discovery.watch, docs/discover.md): cfg, the config file's text, with
// every job of h that it does not watch added, with the sources that see
// their runs, as Generate's Merge adds them (jobs of the same name as a
// configured one stay as configured; a run log read already gets no second
// source; a journal source of cfg that reads the same journal takes the
// units and cron matches). runLog is the run log of jobwatch run lines
// without --log (runcmd.DefaultLog when empty). The result is JSON, with no
// comments: the same host and config give the same bytes.
func HostConfig(h *Host, cfg []byte, runLog string) ([]byte, error) {
	return Generate(h, GenerateOptions{Merge: cfg, JSON: true, RunLog: runLog, JoinJournal: true})
}
