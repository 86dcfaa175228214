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
// root, whose file h could not read (the file, or a directory above it, is
// noted unreadable) and that h has no job of the same name for; it returns
// how many. A crontab or unit directory that cannot be read for a while
// (its mode changed, a mount gone) then does not make its jobs disappear,
// which host mode would take for their removal and retire them.
func (h *Host) KeepUnreadable(prev *Host) int {
	if prev == nil || prev.Root != h.Root {
		return 0
	}
	var unreadable []string
	for _, n := range h.Notes {
		if n.Kind == KindUnreadable {
			unreadable = append(unreadable, n.File)
		}
	}
	if len(unreadable) == 0 {
		return 0
	}
	names := map[string]bool{}
	for i := range h.Jobs {
		names[h.Jobs[i].Name] = true
	}
	// Each kept job goes after the job before it in prev, so that a host
	// read again as it was gives the same config (HostConfig) as before.
	after := map[string][]Job{}
	last, kept := "", 0
	for _, j := range prev.Jobs {
		if !names[j.Name] && slices.ContainsFunc(unreadable, func(p string) bool { return within(j.File, p) }) {
			after[last] = append(after[last], j)
			names[j.Name] = true
			kept++
		}
		if names[j.Name] {
			last = j.Name
		}
	}
	if kept == 0 {
		return 0
	}
	jobs := make([]Job, 0, len(h.Jobs)+kept)
	var add func(name string)
	add = func(name string) {
		for _, j := range after[name] {
			jobs = append(jobs, j)
			add(j.Name)
		}
	}
	add("")
	for _, j := range h.Jobs {
		jobs = append(jobs, j)
		add(j.Name)
	}
	h.Jobs = jobs
	return kept
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
