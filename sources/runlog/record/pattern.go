package record

// Config is what a runlog source's block says about its records: the
// format, the time layout and zone, and the patterns of format regex.
type Config struct {
	Format     string    `yaml:"format"`      // json | logfmt | regex | cron
	TimeFormat string    `yaml:"time_format"` // Go layout; default RFC 3339
	Timezone   string    `yaml:"timezone"`    // for times without an offset
	Patterns   []Pattern `yaml:"patterns"`
	// For format cron: commands map commands to jobs (first match wins);
	// CronLogLevel is cron's -L; nil: not known, told from the lines
	// (cronlog.Detect), and check-config judges Debian's default,
	// DefaultCronLogLevel.
	Commands     []Command `yaml:"commands"`
	CronLogLevel *int      `yaml:"cron_log_level"`
}

// LogLevel is the configured cron -L, or Debian's default (what
// check-config judges).
func (c Config) LogLevel() int {
	if c.CronLogLevel == nil {
		return DefaultCronLogLevel
	}
	return *c.CronLogLevel
}

// Pattern is one regular expression of a format: regex source. Named groups
// carry record fields; the other fields give fixed values for fields the line
// does not carry.
type Pattern struct {
	Regex    string `yaml:"regex"`
	Job      string `yaml:"job"`
	Event    string `yaml:"event"`
	Status   string `yaml:"status"`
	Reason   string `yaml:"reason"`
	Host     string `yaml:"host"`
	ExitCode *int   `yaml:"exit_code"`
}

// PatternGroups are the named groups a pattern may use.
var PatternGroups = []string{"time", "job", "event", "pid", "host", "status", "exit_code", "run_id", "reason", "duration_seconds", "holder_pid", "lock", "holder"}
