// Package discover reads the cron jobs and systemd timers of a host (or of
// a tree standing for one), proposes the jobwatch.yml that watches them and
// finds the scheduling mistakes visible before the first run: the same
// command scheduled twice, blocking or shared locks, locks in cleaned
// directories, missing timeouts, catch-up runs of dense persistent timers,
// fixed times in a DST gap or repeat, and lines cron rejects.
//
// Read runs once over a tree; Check turns what was read into findings;
// Generate writes the config; Scan does all of it for the running exporter
// and counts the jobs no configured job watches.
package discover

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Job is one scheduled job found on the host: a cron line or a timer.
type Job struct {
	// Name is the proposed job name, unique on the host.
	Name string
	// Origin is "cron" or "timer".
	Origin string
	// File and Line say where the job is defined: the crontab line, or the
	// timer's first OnCalendar (or period) line.
	File string
	Line int
	User string // cron: the user it runs as (a user crontab's owner)

	Schedule   string   // cron: five fields or an @-shortcut
	OnCalendar []string // timer
	Every      time.Duration
	// Timezone is the zone the schedule is read in: CRON_TZ, or the host's
	// zone; "" when neither is known.
	Timezone string
	// Zone is Timezone as a location, nil when unknown (no DST checks
	// then).
	Zone *time.Location

	CommandLine string // as written (cron) or the service's ExecStart
	Cmd         Command
	Percent     bool // cron: an unescaped % cut the command

	// Timers and their services.
	Timer           string // backup.timer
	Service         string // backup.service
	ServiceType     string
	Persistent      bool
	PersistentAt    setting
	Accuracy        time.Duration
	AccuracyAt      setting // zero when AccuracySec is the default (1min)
	RandomizedDelay time.Duration
	// Timeout is the job's limit: the line's timeout or jobwatch run
	// --timeout, or the service's TimeoutStartSec (oneshot) or RuntimeMaxSec.
	Timeout time.Duration
}

// Grace is how late a run may start: a timer's RandomizedDelaySec plus its
// AccuracySec plus timerStartSlack; zero (jobwatch's default) for cron.
func (j *Job) Grace() time.Duration {
	if j.Origin != "timer" {
		return 0
	}
	return j.RandomizedDelay + j.Accuracy + timerStartSlack
}

// timerStartSlack is how long the service manager may take from a timer's
// elapsing to the run's start entry ("Starting ..."): milliseconds on an
// idle host, more on a loaded one. On a booted Debian beside stress-ng a
// timer with AccuracySec=1s logged its start 1.009 s after its time, and
// with a grace of AccuracySec alone the run counted as unexpected and its
// slot as missed.
const timerStartSlack = 10 * time.Second

// Where is file:line.
func (j *Job) Where() string {
	if j.Line > 0 {
		return fmt.Sprintf("%s:%d", j.File, j.Line)
	}
	return j.File
}

// Host is everything Read found under a root.
type Host struct {
	Root    string
	Flavour Flavour
	// Zone is the host's time zone name (/etc/timezone or the
	// /etc/localtime link), "" when unknown.
	Zone string
	// Systemd is set when the tree has systemd unit directories: the cron
	// daemon then logs to the journal.
	Systemd bool
	Jobs    []Job
	// Notes are findings made while reading: unreadable and ignored files,
	// @reboot lines, rejected lines, timers left out.
	Notes []Finding
	// Tmpfiles are the directories tmpfiles.d rules clean by age.
	Tmpfiles []string
	// CronLogLevel is Debian cron's -L, from EXTRA_OPTS in
	// /etc/default/cron (1, its default, when none is set).
	CronLogLevel int

	checkModes bool // report crontabs cron skips for their mode
	// dirs are the directories of readDirs that were there (or, gone
	// since a read that found jobs through them, stand as that read
	// found them: KeepUnreadable).
	dirs map[string]bool
	// vanished are the directories of readDirs that were there when the
	// read began and gone by its end (renamed away, unmounted meanwhile):
	// what the read found through them may lack what it read after they
	// went. They stay in dirs: the jobs read through them stand for them.
	vanished []string
}

// readDirs are the directories discovery reads the host's jobs from: a
// directory of them that disappears hides its jobs rather than removing
// them (KeepUnreadable). /etc holds /etc/crontab.
var readDirs = append([]string{"/etc", "/etc/cron.d", "/var/spool/cron/crontabs", "/var/spool/cron"}, unitDirs...)

// Read reads the crontabs, timers and tmpfiles.d rules under root. Files it
// cannot read become notes; only a root that is not a directory is an error.
func Read(root string) (*Host, error) {
	// Modes are only trusted on the live host: a checked-out or unpacked
	// tree takes them from the umask of whoever made it.
	return read(root, filepath.Clean(root) == "/", nil)
}

// readHooks are called between a read's steps (tests): once the
// directories there are noted, and once the files are read.
type readHooks struct {
	dirsNoted, filesRead func()
}

// read reads the host under root, calling hooks (nil: none) between its
// steps.
func read(root string, checkModes bool, hooks *readHooks) (*Host, error) {
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("root %s: not a directory", root)
	}
	h := &Host{Root: root, Flavour: Cronie, checkModes: checkModes, dirs: map[string]bool{}}
	for _, d := range readDirs {
		h.dirs[d] = isDir(root, d)
	}
	if hooks != nil && hooks.dirsNoted != nil {
		hooks.dirsNoted()
	}
	if exists(root, "/var/spool/cron/crontabs") || exists(root, "/etc/debian_version") {
		h.Flavour = Debian
	}
	for _, d := range unitDirs {
		if exists(root, d) {
			h.Systemd = true
		}
	}
	h.Zone = hostZone(root)
	h.readCron()
	h.readCronLevel()
	h.readTimers()
	h.Tmpfiles = readTmpfiles(root, &h.Notes)
	if hooks != nil && hooks.filesRead != nil {
		hooks.filesRead()
	}
	// A directory gone by the end of the read may have gone before its
	// files were read: it counts as gone for this read (KeepUnreadable
	// keeps the jobs of the read before that this one lacks, rather than
	// taking them for removed), and as there for the next.
	for _, d := range readDirs {
		if h.dirs[d] && !isDir(root, d) {
			h.vanished = append(h.vanished, d)
		}
	}
	h.name()
	return h, nil
}

// hostZone is the zone name of /etc/timezone (Debian), or the part after
// zoneinfo/ of the /etc/localtime link.
func hostZone(root string) string {
	if data, err := readFile(root, "/etc/timezone"); err == nil {
		if z := strings.TrimSpace(string(data)); z != "" && loadZone(z) != nil {
			return z
		}
	}
	if t := linkTarget(root, "/etc/localtime"); t != "" {
		if i := strings.Index(t, "zoneinfo/"); i >= 0 {
			if z := t[i+len("zoneinfo/"):]; loadZone(z) != nil {
				return z
			}
		}
	}
	return ""
}

func orUnknown(zone string) string {
	if zone == "" {
		return "zone unknown"
	}
	return zone
}

func loadZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	return loc
}

// readCron reads /etc/crontab, /etc/cron.d and the user crontabs of the
// spool.
func (h *Host) readCron() {
	files := []cronFile{{path: "/etc/crontab", system: true}}
	files = append(files, h.cronDir("/etc/cron.d", true)...)
	if h.Flavour == Debian {
		files = append(files, h.cronDir("/var/spool/cron/crontabs", false)...)
	} else {
		files = append(files, h.cronDir("/var/spool/cron", false)...)
	}
	for _, f := range files {
		h.readCronFile(f)
	}
}

// cronFile is a crontab to read: a system one (with a user field), or a
// user's.
type cronFile struct {
	path   string
	system bool
	user   string
}

// cronDir lists the crontabs of a directory that cron reads, noting those
// it never reads.
func (h *Host) cronDir(dir string, system bool) []cronFile {
	names, err := readDir(h.Root, dir)
	if err != nil {
		if !isNotExist(err) {
			h.Notes = append(h.Notes, unreadable(dir, err))
		}
		return nil
	}
	var files []cronFile
	for _, n := range names {
		p := path.Join(dir, n)
		if isDir(h.Root, p) {
			continue // cron reads no subdirectory; anything else not a regular file is reported when read
		}
		if strings.HasPrefix(n, ".") {
			continue // cron skips hidden files; Debian ships .placeholder
		}
		why := cronIgnores(h.Flavour, n)
		if !system {
			// Spool files are named after their user: only hidden
			// files (editors' and crontab's temporaries) are skipped.
			why = ""
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "#") || strings.HasPrefix(n, "tmp.") {
				continue
			}
		}
		if why != "" {
			h.Notes = append(h.Notes, Finding{File: p, Kind: KindIgnoredFile, Severity: Info,
				Message: "cron never reads this file: " + why,
				Fix:     "rename it (e.g. " + path.Join(dir, fixName(n)) + ") if its jobs should run, or delete it"})
			continue
		}
		f := cronFile{path: p, system: system}
		if !system {
			f.user = n
		}
		files = append(files, f)
	}
	return files
}

// readCronFile reads one crontab, unless cron would refuse it.
func (h *Host) readCronFile(f cronFile) {
	data, ok := readNoting(h.Root, f.path, &h.Notes)
	if !ok {
		return
	}
	if fi, err := os.Stat(hostPath(h.Root, f.path)); h.checkModes && err == nil && fi.Mode().Perm()&0o022 != 0 {
		// Debian's cron ("INSECURE MODE") and cronie ("BAD FILE
		// MODE") skip a crontab others could write to.
		h.Notes = append(h.Notes, Finding{File: f.path, Kind: KindIgnoredFile, Severity: Warning,
			Message: fmt.Sprintf("cron never reads this file: it is group- or other-writable (mode %04o)", fi.Mode().Perm()),
			Fix:     "chmod go-w " + f.path})
		return
	}
	h.readCrontab(f.path, data, f.system, f.user)
}

// fixName is a cron.d file name Debian's cron reads.
func fixName(n string) string {
	var b strings.Builder
	for _, r := range n {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == '.':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func (h *Host) readCrontab(file string, data []byte, system bool, owner string) {
	env := cronEnv{path: cronPath}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		l, err := ParseCronLine(raw, system)
		if err != nil {
			h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindCronRejected, Severity: Warning,
				Message: "this line never runs: " + err.Error(),
				Fix:     "correct the line (see crontab(5))"})
			continue
		}
		switch l.Kind {
		case LineEnv:
			h.setCronEnv(&env, file, n, l)
			continue
		case LineBlank:
			continue
		}
		if h.cronLeftOut(file, n, l) {
			continue
		}
		user := l.User
		if !system {
			user = owner
		}
		h.Jobs = append(h.Jobs, h.cronJob(file, n, l, user, env))
	}
}

// cronEnv is what the environment lines of a crontab so far set for the
// lines below: the zone they are read in ("" for the host's) and PATH.
type cronEnv struct {
	tz, path string
}

// setCronEnv applies a crontab's environment line to env, noting the
// settings that do not do what they seem to.
func (h *Host) setCronEnv(env *cronEnv, file string, n int, l CronLine) {
	switch l.Name {
	case "CRON_TZ":
		if h.Flavour == Debian {
			h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindCronTZIgnored, Severity: Warning,
				Message: fmt.Sprintf("Debian's cron ignores CRON_TZ: the lines below run on the host's clock (%s), not in %s", orUnknown(h.Zone), l.Value),
				Fix:     "write the times in the host's zone, or move the jobs to a systemd timer with OnCalendar=... " + l.Value})
			return
		}
		if loadZone(l.Value) == nil {
			h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindCronRejected, Severity: Warning,
				Message: fmt.Sprintf("CRON_TZ=%s is not a known time zone: cron reads the lines below in UTC", l.Value),
				Fix:     "use an IANA zone name such as Europe/Berlin"})
			env.tz = "UTC"
			return
		}
		env.tz = l.Value
	case "PATH":
		env.path = l.Value
	case "TZ":
		fix := "use CRON_TZ=" + l.Value + " if the times below are meant in that zone"
		if h.Flavour == Debian {
			fix = "Debian's cron reads every schedule on the host's clock: write the times in " + orUnknown(h.Zone) + ", or use a systemd timer"
		}
		h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindTZEnv, Severity: Info,
			Message: "TZ= sets the zone of the commands' environment, not the zone cron reads the schedules in",
			Fix:     fix})
	}
}

// cronLeftOut notes a job line that has nothing to watch, and reports
// whether it is one.
func (h *Host) cronLeftOut(file string, n int, l CronLine) bool {
	if l.Reboot {
		h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindReboot, Severity: Info,
			Message: "@reboot job left out: it runs once at boot, there is no schedule to watch",
			Fix:     "watch it with a job of its own (every: as long as the host stays up) if its runs matter"})
		return true
	}
	if why := h.noOp(l.Command); why != "" {
		h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindNoOp, Severity: Info,
			Message: "left out: " + why,
			Fix:     "none needed; delete the line if the package that shipped it is gone"})
		return true
	}
	return false
}

// cronJob is the job of a crontab's job line, run as user.
func (h *Host) cronJob(file string, n int, l CronLine, user string, env cronEnv) Job {
	j := Job{Origin: "cron", File: file, Line: n, User: user, Schedule: l.Schedule,
		CommandLine: l.Command, Cmd: parseCommand(l.Command, h.resolver(env.path)), Percent: l.Percent}
	if prog, dir := h.missingFromPath(l.Command, env.path); dir != "" {
		h.Notes = append(h.Notes, Finding{File: file, Line: n, Kind: KindNotInPath, Severity: Warning,
			Message: fmt.Sprintf("%s is in %s, which cron's PATH=%s lacks: the job fails with \"not found\"", prog, dir, env.path),
			Fix:     fmt.Sprintf("write %s in full, or add PATH=%s:%s above the line", path.Join(dir, prog), dir, env.path)})
	}
	j.Timezone = env.tz
	if j.Timezone == "" {
		j.Timezone = h.Zone
	}
	j.Zone = loadZone(j.Timezone)
	j.Timeout = j.Cmd.Timeout
	return j
}

// The search paths of programs named without a directory: cron's default
// PATH (Debian and cronie alike) until a PATH= line, and systemd's fixed
// one for ExecStart=.
const (
	cronPath    = "/usr/bin:/bin"
	systemdPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// resolver returns the function that turns a program's name into the file
// it runs on the host: searched in pathList when it has no '/', and under
// /usr when /bin, /sbin or /lib link there (merged /usr), so that one
// program named two ways compares equal. A name not found stays as it is.
func (h *Host) resolver(pathList string) func(string) string {
	return func(prog string) string {
		if !strings.Contains(prog, "/") {
			for _, dir := range strings.Split(pathList, ":") {
				if dir == "" || !path.IsAbs(dir) {
					continue
				}
				if p := path.Join(dir, prog); isRegular(h.Root, p) {
					prog = p
					break
				}
			}
		}
		if !path.IsAbs(prog) {
			return prog
		}
		for _, d := range []string{"/bin", "/sbin", "/lib"} {
			if strings.HasPrefix(prog, d+"/") && linkTarget(h.Root, d) == "/usr"+d {
				return "/usr" + prog
			}
		}
		return path.Clean(prog)
	}
}

// missingFromPath finds the first program of a cron command that cron's
// PATH does not hold but another usual directory does: a command that
// works in a login shell and fails under cron.
func (h *Host) missingFromPath(cmd, pathList string) (prog, dir string) {
	for _, seg := range segments(shellWords(cmd)) {
		var c Command
		words := c.unwrap(seg, 0)
		if len(words) == 0 || strings.Contains(words[0], "/") || strings.ContainsAny(words[0], "$`") {
			continue
		}
		if r := h.resolver(pathList)(words[0]); r != words[0] {
			continue // found
		}
		for _, d := range strings.Split(systemdPath, ":") {
			if isRegular(h.Root, path.Join(d, words[0])) {
				return words[0], d
			}
		}
	}
	return "", ""
}

// readTimers reads every timer unit with its service.
func (h *Host) readTimers() {
	sd := &systemd{root: h.Root}
	names, enabled := sd.timerNames()
	for _, name := range names {
		t := h.enabledTimer(sd, name, enabled[name])
		if t == nil {
			continue
		}
		j := Job{Origin: "timer", Timer: name, File: t.File}
		h.readOnCalendar(t, &j)
		if len(j.OnCalendar) == 0 {
			h.readPeriod(t, &j)
		}
		if len(j.OnCalendar) == 0 && j.Every == 0 {
			where := setting{File: t.File}
			if s, ok := t.last("Timer.OnBootSec"); ok {
				where = s
			}
			h.Notes = append(h.Notes, Finding{File: where.File, Line: where.Line, Kind: KindTimerLeftOut, Severity: Info,
				Message: name + " has no OnCalendar or OnUnitActiveSec: it fires once (after boot), there is no period to watch",
				Fix:     "add OnUnitActiveSec= or OnCalendar= if it should repeat"})
			continue
		}
		readTimerSettings(t, &j)
		j.Timezone = h.Zone
		j.Zone = loadZone(j.Timezone)
		h.readService(sd, &j)
		h.Jobs = append(h.Jobs, j)
	}
	h.Notes = append(h.Notes, sd.problems...)
}

// enabledTimer reads the timer unit name, or returns nil, noting why, when
// it does not run.
func (h *Host) enabledTimer(sd *systemd, name string, enabled bool) *unit {
	t, masked := sd.readUnit(name)
	if masked {
		return nil
	}
	if t == nil {
		h.Notes = append(h.Notes, Finding{File: "/etc/systemd/system", Kind: KindTimerLeftOut, Severity: Info,
			Message: name + " is enabled but no unit file defines it",
			Fix:     "systemctl disable " + name})
		return nil
	}
	if !enabled {
		h.Notes = append(h.Notes, Finding{File: t.File, Kind: KindTimerLeftOut, Severity: Info,
			Message: name + " is not enabled (no .wants link): left out, it does not run",
			Fix:     "systemctl enable --now " + name + " if it should run"})
		return nil
	}
	return t
}

// readOnCalendar reads the timer's OnCalendar= expressions, leaving out
// those systemd rejects; the job is defined at the first.
func (h *Host) readOnCalendar(t *unit, j *Job) {
	for _, s := range t.vals["Timer.OnCalendar"] {
		if _, err := calendarSchedule([]string{s.Value}, time.UTC); err != nil {
			h.Notes = append(h.Notes, Finding{File: s.File, Line: s.Line, Kind: KindTimerLeftOut, Severity: Warning,
				Message: fmt.Sprintf("OnCalendar=%s left out: %v", s.Value, err),
				Fix:     "check it with systemd-analyze calendar '" + s.Value + "'"})
			continue
		}
		j.OnCalendar = append(j.OnCalendar, s.Value)
		if j.Line == 0 {
			j.File, j.Line = s.File, s.Line
		}
	}
}

// readPeriod reads the period of a timer without OnCalendar=: the first
// valid of OnUnitActiveSec= and OnUnitInactiveSec=.
func (h *Host) readPeriod(t *unit, j *Job) {
	for _, key := range []string{"Timer.OnUnitActiveSec", "Timer.OnUnitInactiveSec"} {
		s, ok := t.last(key)
		if !ok {
			continue
		}
		d, inf, err := parseTimespan(s.Value)
		if err != nil || inf || d <= 0 {
			h.Notes = append(h.Notes, Finding{File: s.File, Line: s.Line, Kind: KindTimerLeftOut, Severity: Warning,
				Message: fmt.Sprintf("%s=%s is not a time span systemd reads", strings.TrimPrefix(key, "Timer."), s.Value),
				Fix:     "write a span such as 15min or 1h"})
			continue
		}
		j.Every = d.Round(time.Second)
		j.File, j.Line = s.File, s.Line
		return
	}
}

// readTimerSettings reads what else of the timer the checks weigh, and the
// service it starts.
func readTimerSettings(t *unit, j *Job) {
	if s, ok := t.last("Timer.Persistent"); ok && isTrue(s.Value) {
		j.Persistent, j.PersistentAt = true, s
	}
	j.Accuracy = time.Minute
	if s, ok := t.last("Timer.AccuracySec"); ok {
		if d, _, err := parseTimespan(s.Value); err == nil {
			j.Accuracy, j.AccuracyAt = d, s
		}
	}
	if s, ok := t.last("Timer.RandomizedDelaySec"); ok {
		if d, _, err := parseTimespan(s.Value); err == nil {
			j.RandomizedDelay = d
		}
	}
	j.Service = strings.TrimSuffix(j.Timer, ".timer") + ".service"
	if s, ok := t.last("Timer.Unit"); ok {
		j.Service = s.Value
	}
}

// readService fills in what the timer's service runs and its limits.
func (h *Host) readService(sd *systemd, j *Job) {
	svc, _ := sd.readUnit(j.Service)
	if svc == nil {
		h.Notes = append(h.Notes, Finding{File: j.File, Line: j.Line, Kind: KindTimerLeftOut, Severity: Warning,
			Message: j.Timer + " starts " + j.Service + ", which no unit file defines: every run fails",
			Fix:     "create " + j.Service + " or set Unit= in " + j.Timer})
		return
	}
	j.ServiceType = "simple"
	if s, ok := svc.last("Service.Type"); ok {
		j.ServiceType = s.Value
	}
	instance := ""
	if at, dot := strings.IndexByte(j.Service, '@'), strings.LastIndexByte(j.Service, '.'); at >= 0 && dot > at {
		instance = j.Service[at+1 : dot]
	}
	var cmds []string
	for _, s := range svc.vals["Service.ExecStart"] {
		c := strings.TrimLeft(s.Value, "-@:+!|")
		cmds = append(cmds, strings.NewReplacer("%i", instance, "%I", instance, "%%", "%").Replace(c))
	}
	j.CommandLine = strings.Join(cmds, " ; ")
	j.Cmd = parseCommand(j.CommandLine, h.resolver(systemdPath))
	limit := func(key string) time.Duration {
		s, ok := svc.last(key)
		if !ok {
			return 0
		}
		d, inf, err := parseTimespan(s.Value)
		if err != nil || inf {
			return 0
		}
		return d
	}
	var t time.Duration
	if j.ServiceType == "oneshot" {
		// Type=oneshot: the start timeout bounds the whole run, and is
		// off unless set.
		t = limit("Service.TimeoutSec")
		if d := limit("Service.TimeoutStartSec"); d > 0 {
			t = d
		}
	}
	for _, d := range []time.Duration{limit("Service.RuntimeMaxSec"), j.Cmd.Timeout} {
		if d > 0 && (t == 0 || d < t) {
			t = d
		}
	}
	j.Timeout = t
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "1", "yes", "true", "on", "y", "t":
		return true
	}
	return false
}

// name gives every job a unique, valid job name: the timer's name without
// .timer; for cron, jobwatch run's --job, else the command's program. A
// name taken already gets the user, then a number appended.
func (h *Host) name() {
	taken := map[string]bool{}
	// Timers first: they keep their unit's name.
	order := make([]*Job, 0, len(h.Jobs))
	for _, timers := range []bool{true, false} {
		for i := range h.Jobs {
			if (h.Jobs[i].Origin == "timer") == timers {
				order = append(order, &h.Jobs[i])
			}
		}
	}
	for _, j := range order {
		base := ""
		switch {
		case j.Origin == "timer":
			base = strings.TrimSuffix(j.Timer, ".timer")
		case j.Cmd.RunJob != "":
			base = j.Cmd.RunJob
		default:
			base = j.Cmd.Name
		}
		base = jobName(base)
		name := base
		if taken[name] && j.User != "" && j.User != "root" {
			name = jobName(base + "-" + j.User)
		}
		for k := 2; taken[name]; k++ {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		taken[name] = true
		j.Name = name
	}
}

// jobName turns s into a valid job name (config's name rule).
func jobName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9', r == '.', r == ':', r == '-':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "job"
	}
	return b.String()
}

// sortFindings orders findings by file, line, kind and message.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(a, b int) bool {
		x, y := fs[a], fs[b]
		if x.File != y.File {
			return x.File < y.File
		}
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		return x.Message < y.Message
	})
}
