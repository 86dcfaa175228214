package journal

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
)

// Type is the type of source this package reads.
const Type = "journal"

func init() { sources.Register(Type, decode) }

func decode(b config.Block) (sources.Config, []error) {
	var c Config
	errs := config.DecodeBlock(b, &c)
	errs = append(errs, c.validate(b.Jobs)...)
	c.Directory = b.Resolve(c.Directory)
	for i := range c.Files {
		c.Files[i] = b.Resolve(c.Files[i])
	}
	return &c, errs
}

var (
	_ sources.Config      = (*Config)(nil)
	_ sources.RunReporter = (*Config)(nil)
)

// DefaultLateWindow is a journal source's late window: journald stamps an
// entry when it receives it, and a follower hands it over within moments.
const DefaultLateWindow = 2 * time.Second

// LateWindow is how late, in event time, an entry may be handed over: the
// late_window key, defaulted.
func (j *Config) LateWindow() time.Duration {
	return sources.LateWindowOf(j.Lateness, DefaultLateWindow)
}

// Identity is the journal read: the directory or files (none: the system
// journal).
func (j *Config) Identity() string {
	return "journal:" + j.Directory + ":" + strings.Join(j.Files, ",")
}

// New builds the source.
func (j *Config) New(name string, deps sources.Deps) (sources.Source, error) {
	return New(name, *j, deps)
}

// Config is the block of a type: journal source.
type Config struct {
	// Directory or Files select journal files as journalctl --directory and
	// --file take them; neither means the system journal.
	Directory string            `yaml:"directory"`
	Files     []string          `yaml:"files"`
	Units     map[string]string `yaml:"units"` // unit -> job
	Cron      []CronMatch       `yaml:"cron"`
	// CronLogLevel is the -L of the cron whose lines are read (host mode
	// writes it from /etc/default/cron); nil: not known, told from the
	// lines (internal/cronlog).
	CronLogLevel *int `yaml:"cron_log_level"`
	// Lateness is the late_window key as written (0: the default); see
	// LateWindow.
	Lateness config.Duration `yaml:"late_window"`
}

// CronMatch maps cron daemon CMD lines whose command matches Match to Job.
type CronMatch struct {
	Match string `yaml:"match"`
	Job   string `yaml:"job"`
}

func (j *Config) validate(jobs map[string]bool) []error {
	var errs []error
	if j.Directory != "" && len(j.Files) > 0 {
		errs = append(errs, fmt.Errorf("directory and files are exclusive"))
	}
	if len(j.Units) == 0 && len(j.Cron) == 0 {
		errs = append(errs, fmt.Errorf("needs units or cron"))
	}
	if err := sources.CheckLateWindow(j.Lateness); err != nil {
		errs = append(errs, err)
	}
	units := make([]string, 0, len(j.Units))
	for u := range j.Units {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		if !strings.HasSuffix(u, ".service") || len(u) == len(".service") || strings.ContainsAny(u, " /+=") {
			// journalctl matches UNIT= exactly; a timer's runs are its service's.
			errs = append(errs, fmt.Errorf("units[%s]: must be a service unit name like backup.service (for a timer, list the service it starts)", u))
		}
		if !jobs[j.Units[u]] {
			errs = append(errs, fmt.Errorf("units[%s]: job %q is not configured", u, j.Units[u]))
		}
	}
	if l := j.CronLogLevel; l != nil && (*l < 0 || *l > 15) {
		errs = append(errs, fmt.Errorf("cron_log_level must be 0 to 15 (cron's -L), got %d", *l))
	}
	if j.CronLogLevel != nil && len(j.Cron) == 0 {
		errs = append(errs, fmt.Errorf("cron_log_level is only for cron"))
	}
	for i, m := range j.Cron {
		if _, err := regexp.Compile(m.Match); err != nil || m.Match == "" {
			errs = append(errs, fmt.Errorf("cron[%d].match: bad regex %q", i, m.Match))
		}
		if !jobs[m.Job] {
			errs = append(errs, fmt.Errorf("cron[%d]: job %q is not configured", i, m.Job))
		}
	}
	return errs
}
