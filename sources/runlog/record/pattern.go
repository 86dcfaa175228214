package record

// Config is what a runlog source's block says about its records: the
// format, the time layout and zone, and the patterns of format regex.
type Config struct {
	Format     string    `yaml:"format"`      // json | logfmt | regex
	TimeFormat string    `yaml:"time_format"` // Go layout; default RFC 3339
	Timezone   string    `yaml:"timezone"`    // for times without an offset
	Patterns   []Pattern `yaml:"patterns"`
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
