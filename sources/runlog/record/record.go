// Package record parses the lines of a runlog source into model events. A
// line is a JSON object, a logfmt line or, for application logs, a line
// matched by one of a list of regular expressions. The record format is
// described in docs/records.md.
//
// The JSON and logfmt parsers are allocation-free scanners: on a well-formed
// line the only allocations are the strings an Event keeps (job, host and
// reason are interned, so repeated values cost nothing; run_id is copied).
package record

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/jobwatch/jobwatch/internal/jobname"
	"github.com/jobwatch/jobwatch/model"
)

// Options are the settings every format shares.
type Options struct {
	// TimeFormat is the Go layout of the time field. Empty (or time.RFC3339,
	// time.RFC3339Nano) selects the built-in RFC 3339 parser, which accepts
	// optional fractional seconds and an optional offset.
	TimeFormat string
	// Location is the zone of times that carry no offset; nil means UTC.
	Location *time.Location
}

// Parser turns one line (without its newline) into an event. Parse resets
// ev first; on error ev holds no meaningful event. Strings stored in ev never
// alias line, so the caller may reuse the buffer. Errors are short and never
// quote more than a few dozen bytes of the line. A Parser is not safe for
// concurrent use.
type Parser interface {
	Parse(line []byte, ev *model.Event) error
}

var (
	// ErrNoMatch is returned by the regex parser for a line that matches no
	// pattern: in an application log most lines are not job records, so the
	// caller skips these rather than counting them as errors.
	ErrNoMatch = errors.New("record: line matches no pattern")
	// ErrEmpty is returned for an empty or blank line.
	ErrEmpty = errors.New("record: empty line")
)

// Limits on field values.
const (
	MaxJobLen    = 128
	MaxHostLen   = 255
	MaxRunIDLen  = 128
	MaxReasonLen = 255
	MaxHolderLen = 255
	// MaxLockTTL bounds lock_ttl_seconds.
	MaxLockTTL = model.MaxLockTTL
	// maxIntern bounds each intern table; a full table is cleared.
	maxIntern = 4096
)

// New returns the parser of a format: json, logfmt or regex (format cron,
// which maps commands to jobs, is NewCron's, or FromConfig's). Patterns are
// for regex only.
func New(format string, patterns []Pattern, o Options) (Parser, error) {
	switch format {
	case "json", "logfmt":
		if len(patterns) > 0 {
			return nil, fmt.Errorf("record: patterns are only for format regex")
		}
		if format == "json" {
			return NewJSON(o), nil
		}
		return NewLogfmt(o), nil
	case "regex":
		return NewRegex(patterns, o)
	}
	return nil, fmt.Errorf("record: unknown format %q (want json, logfmt or regex)", format)
}

// FromConfig returns the parser of a runlog source's config: its format,
// patterns (or commands), time_format and timezone.
func FromConfig(r Config) (Parser, error) {
	o := Options{TimeFormat: r.TimeFormat}
	if r.Timezone != "" {
		loc, err := time.LoadLocation(r.Timezone)
		if err != nil {
			return nil, fmt.Errorf("record: timezone %q: %w", r.Timezone, err)
		}
		o.Location = loc
	}
	if r.Format == "cron" {
		c, err := NewCron(r.Commands, o.Location, nil)
		if err != nil {
			return nil, err
		}
		if r.CronLogLevel != nil {
			c.SetLevel(*r.CronLogLevel)
		}
		return c, nil
	}
	return New(r.Format, r.Patterns, o)
}

// field is a known record key.
type field uint8

const (
	fTime field = iota
	fJob
	fEvent
	fHost
	fPID
	fRunID
	fStatus
	fExitCode
	fDuration
	fReason
	fHolderPID
	fLock
	fHolder
	fLockTTL
	nFields
)

var fieldNames = [nFields]string{
	fTime: "time", fJob: "job", fEvent: "event", fHost: "host", fPID: "pid",
	fRunID: "run_id", fStatus: "status", fExitCode: "exit_code",
	fDuration: "duration_seconds", fReason: "reason", fHolderPID: "holder_pid",
	fLock: "lock", fHolder: "holder", fLockTTL: "lock_ttl_seconds",
}

func (f field) String() string { return fieldNames[f] }

// lookupField maps a key to its field; the switch on string(k) does not allocate.
func lookupField(k []byte) (field, bool) {
	switch string(k) {
	case "time":
		return fTime, true
	case "job":
		return fJob, true
	case "event":
		return fEvent, true
	case "host":
		return fHost, true
	case "pid":
		return fPID, true
	case "run_id":
		return fRunID, true
	case "status":
		return fStatus, true
	case "exit_code":
		return fExitCode, true
	case "duration_seconds":
		return fDuration, true
	case "reason":
		return fReason, true
	case "holder_pid":
		return fHolderPID, true
	case "lock":
		return fLock, true
	case "holder":
		return fHolder, true
	case "lock_ttl_seconds":
		return fLockTTL, true
	}
	return 0, false
}

// vkind is what a raw value looked like in the line.
type vkind uint8

const (
	vAbsent vkind = iota
	vNull         // JSON null
	vString       // quoted string; b is between the quotes, esc says it has escapes
	vText         // bare text: a logfmt value, a regex group, a pattern's fixed field
	vNumber       // JSON number, grammar already checked
	vBool         // JSON true or false
)

// value is a field's raw bytes as found in the line (aliasing it).
type value struct {
	b    []byte
	kind vkind
	esc  bool
}

// core holds what every format shares: the raw values of the known fields
// of the current line, and their conversion into an Event.
type core struct {
	vals    [nFields]value
	scratch []byte
	layout  string // "" selects the built-in RFC 3339 parser
	loc     *time.Location
	jobs    interner
	hosts   interner
	reasons interner
	holders interner
	// skipReasons are the skip reasons kept as they are: model.SkipReasons
	// and those the config declares; any other counts as model.SkipOther,
	// so that the reason label of jobwatch_job_skips_total stays bounded.
	skipReasons map[string]string
}

// declareSkipReason adds a skip reason the config names.
func (c *core) declareSkipReason(r string) { c.skipReasons[r] = r }

// skipReason returns the reason a skip counts under.
func (c *core) skipReason(b []byte) string {
	if r, ok := c.skipReasons[string(b)]; ok {
		return r
	}
	return model.SkipOther
}

func newCore(o Options) core {
	c := core{layout: o.TimeFormat, loc: o.Location}
	if c.layout == time.RFC3339 || c.layout == time.RFC3339Nano {
		c.layout = ""
	}
	if c.loc == nil {
		c.loc = time.UTC
	}
	c.jobs.max, c.hosts.max, c.reasons.max, c.holders.max = maxIntern, maxIntern, 256, 256
	c.skipReasons = make(map[string]string, len(model.SkipReasons))
	for _, r := range model.SkipReasons {
		c.skipReasons[r] = r
	}
	return c
}

// errf builds a parse error. Values are quoted with quote, never whole.
func errf(f field, format string, args ...any) error {
	return fmt.Errorf("record: %s: "+format, append([]any{f}, args...)...)
}

// quote quotes at most 40 bytes of b for an error message.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}

// text returns a string field's bytes, unescaped; nil when absent, null or
// empty. The result may alias the line or the scratch buffer and is valid
// until the next call.
func (c *core) text(f field) ([]byte, error) {
	v := &c.vals[f]
	switch v.kind {
	case vAbsent, vNull:
		return nil, nil
	case vNumber, vBool:
		return nil, errf(f, "must be a string, got %s", quote(v.b))
	}
	if !v.esc {
		return v.b, nil
	}
	c.scratch = unescape(c.scratch[:0], v.b)
	return c.scratch, nil
}

// printable reports whether b has no ASCII control characters.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// str is text for a free-form string field with a length limit.
func (c *core) str(f field, max int) ([]byte, error) {
	b, err := c.text(f)
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, errf(f, "longer than %d bytes", max)
	}
	if !printable(b) {
		return nil, errf(f, "contains a control character")
	}
	if c.vals[f].esc && !utf8.Valid(b) {
		return nil, errf(f, "invalid UTF-8")
	}
	return b, nil
}

// number returns the bytes of a numeric field: a JSON number or a numeric
// string; nil when absent, null or empty.
func (c *core) number(f field) ([]byte, error) {
	v := &c.vals[f]
	switch v.kind {
	case vAbsent, vNull:
		return nil, nil
	case vBool:
		return nil, errf(f, "must be a number, got %s", quote(v.b))
	case vNumber, vText:
		return v.b, nil
	}
	return c.text(f)
}

// integer converts an integer field and checks its range; ok is false when
// the field is absent.
func (c *core) integer(f field, min, max int64) (n int, ok bool, err error) {
	b, err := c.number(f)
	if err != nil || len(b) == 0 {
		return 0, false, err
	}
	v, good := parseInt(b)
	if !good {
		return 0, false, errf(f, "not an integer: %s", quote(b))
	}
	if v < min || v > max {
		return 0, false, errf(f, "out of range: %s", quote(b))
	}
	return int(v), true, nil
}

// maxDurationSeconds is the longest duration time.Duration holds, in seconds.
const maxDurationSeconds = float64(math.MaxInt64) / 1e9

// finish converts the raw values of the current line into ev, which Parse
// has zeroed, checking every known field whatever the event.
func (c *core) finish(ev *model.Event) error {
	if err := c.identify(ev); err != nil {
		return err
	}
	if err := c.origin(ev); err != nil {
		return err
	}
	var f byKind
	if err := c.outcome(&f, ev.Kind); err != nil {
		return err
	}
	if err := c.lockFields(&f); err != nil {
		return err
	}
	return c.assign(ev, &f)
}

// byKind holds the fields checked on every line but kept only by the kinds
// of event they belong to.
type byKind struct {
	result             model.Result
	exitCode           int
	hasExit            bool
	dur                time.Duration
	hasDur             bool
	reason, skipReason string
	holderPID          int
	holder             string
	lock               string
	lockTTL            time.Duration
}

// identify reads the fields every record requires: time, job and event.
func (c *core) identify(ev *model.Event) error {
	b, err := c.text(fTime)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errRequired(fTime)
	}
	if ev.Time, err = c.parseTime(b); err != nil {
		return err
	}

	if b, err = c.text(fJob); err != nil {
		return err
	}
	if len(b) == 0 {
		return errRequired(fJob)
	}
	if !validJob(b) {
		if len(b) > MaxJobLen {
			return errf(fJob, "longer than %d bytes", MaxJobLen)
		}
		return errf(fJob, "%s must match %s", quote(b), jobname.Pattern)
	}
	ev.Job = c.jobs.get(b)

	if b, err = c.text(fEvent); err != nil {
		return err
	}
	if len(b) == 0 {
		return errRequired(fEvent)
	}
	var ok bool
	if ev.Kind, ok = parseKind(b); !ok {
		return errf(fEvent, "must be start, end, skip or lock_lost, got %s", quote(b))
	}
	return nil
}

// origin reads the optional fields saying which run it was: host, pid and
// run id.
func (c *core) origin(ev *model.Event) error {
	b, err := c.str(fHost, MaxHostLen)
	if err != nil {
		return err
	}
	ev.Host = c.hosts.get(b)

	if ev.PID, _, err = c.integer(fPID, 0, math.MaxInt32); err != nil {
		return err
	}

	if b, err = c.str(fRunID, MaxRunIDLen); err != nil {
		return err
	}
	if len(b) > 0 {
		ev.RunID = string(b)
	}
	return nil
}

// outcome reads how a run ended: status, exit code, duration and reason.
func (c *core) outcome(f *byKind, kind model.Kind) error {
	b, err := c.text(fStatus)
	if err != nil {
		return err
	}
	if len(b) > 0 {
		var ok bool
		if f.result, ok = parseStatus(b); !ok {
			return errf(fStatus, "must be success, failure, timeout or skipped, got %s", quote(b))
		}
	}

	if f.exitCode, f.hasExit, err = c.integer(fExitCode, math.MinInt32, math.MaxInt32); err != nil {
		return err
	}

	if b, err = c.number(fDuration); err != nil {
		return err
	}
	if len(b) > 0 {
		s, good := parseFloat(b)
		switch {
		case !good:
			return errf(fDuration, "not a number: %s", quote(b))
		case s < 0:
			return errf(fDuration, "negative: %s", quote(b))
		case s >= maxDurationSeconds:
			return errf(fDuration, "too large: %s", quote(b))
		}
		f.dur, f.hasDur = time.Duration(math.Round(s*1e9)), true
	}

	if b, err = c.str(fReason, MaxReasonLen); err != nil {
		return err
	}
	// Taken now: the scratch space b may lie in is reused below. A start
	// keeps no reason: skip the look-ups, the common case.
	if kind != model.Start {
		f.reason = c.reasons.get(b)
		f.skipReason = c.skipReason(b)
	}
	return nil
}

// lockFields reads what a record says of a lock: the holder's pid, the
// holder, the layer and the lease.
func (c *core) lockFields(f *byKind) error {
	var err error
	if f.holderPID, _, err = c.integer(fHolderPID, 0, math.MaxInt32); err != nil {
		return err
	}
	h, err := c.str(fHolder, MaxHolderLen)
	if err != nil {
		return err
	}
	// Interned now: h may alias the scratch buffer, which reading the
	// next fields reuses.
	f.holder = c.holders.get(h)
	b, err := c.text(fLock)
	if err != nil {
		return err
	}
	if len(b) > 0 {
		var ok bool
		if f.lock, ok = parseLock(b); !ok {
			return errf(fLock, "must be file, redis or mysql, got %s", quote(b))
		}
	}

	if b, err = c.number(fLockTTL); err != nil {
		return err
	}
	if len(b) > 0 {
		s, good := parseFloat(b)
		switch {
		case !good:
			return errf(fLockTTL, "not a number: %s", quote(b))
		case s <= 0:
			return errf(fLockTTL, "not positive: %s", quote(b))
		case s > MaxLockTTL.Seconds():
			return errf(fLockTTL, "longer than %d seconds: %s", int64(MaxLockTTL.Seconds()), quote(b))
		}
		f.lockTTL = time.Duration(math.Round(s * 1e9))
	}
	return nil
}

// assign keeps in ev the fields its kind of event has, and checks those
// the kind requires.
func (c *core) assign(ev *model.Event, f *byKind) error {
	switch ev.Kind {
	case model.Start:
		ev.LockTTL = f.lockTTL
		if f.lock == "file" {
			ev.Lock = f.lock // it holds its host's lock file
		}
	case model.End:
		if f.result == "" {
			return errors.New("record: status is required for event end")
		}
		ev.Result = f.result
		ev.ExitCode, ev.HasExitCode = f.exitCode, f.hasExit
		ev.Duration, ev.HasDuration = f.dur, f.hasDur
		ev.Reason = f.reason
		if f.result == model.Skipped {
			// The run started and declined to run: its reason counts as a
			// skip's does.
			ev.SkipLabel = f.skipReason
		}
	case model.Skip:
		ev.Reason, ev.SkipLabel = f.reason, f.skipReason
		ev.HolderPID = f.holderPID
		ev.Lock, ev.Holder = f.lock, f.holder
	case model.LockLost:
		if f.lock == "" || f.lock == "file" {
			return errors.New("record: lock redis or mysql is required for event lock_lost")
		}
		ev.Lock, ev.Holder = f.lock, f.holder
		ev.Reason = f.reason
	}
	return nil
}

// parseLock reads a lock layer.
func parseLock(b []byte) (string, bool) {
	switch string(b) {
	case "file":
		return "file", true
	case "redis":
		return "redis", true
	case "mysql":
		return "mysql", true
	}
	return "", false
}

func errRequired(f field) error {
	return fmt.Errorf("record: %s is required", f)
}

// parseTime parses the time field with the configured layout; the result is
// in UTC.
func (c *core) parseTime(b []byte) (time.Time, error) {
	var t time.Time
	if c.layout == "" {
		var ok bool
		if t, ok = parseRFC3339(b, c.loc); !ok {
			return time.Time{}, errf(fTime, "not an RFC 3339 time: %s", quote(b))
		}
	} else {
		var err error
		if t, err = time.ParseInLocation(c.layout, string(b), c.loc); err != nil {
			return time.Time{}, errf(fTime, "%s does not match layout %q", quote(b), c.layout)
		}
		if t.Year() == 0 {
			return time.Time{}, errf(fTime, "layout %q has no year", c.layout)
		}
	}
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 || t.IsZero() {
		return time.Time{}, errf(fTime, "out of range: %s", quote(b))
	}
	return t, nil
}

func parseKind(b []byte) (model.Kind, bool) {
	switch string(b) {
	case "start":
		return model.Start, true
	case "end":
		return model.End, true
	case "skip":
		return model.Skip, true
	case "lock_lost":
		return model.LockLost, true
	}
	return 0, false
}

func parseStatus(b []byte) (model.Result, bool) {
	switch string(b) {
	case "success":
		return model.Success, true
	case "failure":
		return model.Failure, true
	case "timeout":
		return model.Timeout, true
	case "skipped":
		return model.Skipped, true
	}
	return "", false
}

// validJob reports whether b follows the job-name rule (jobname.Pattern)
// and is at most MaxJobLen bytes.
func validJob(b []byte) bool {
	return len(b) <= MaxJobLen && jobname.ValidBytes(b)
}

// interner returns one shared string per distinct value, so a repeated job
// or host costs no allocation. It holds at most max strings: when full it is
// cleared, so unbounded distinct input cannot grow it without limit.
type interner struct {
	m   map[string]string
	max int
}

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	} else if len(in.m) >= in.max {
		clear(in.m)
	}
	in.m[s] = s
	return s
}

// parseInt parses -?[0-9]+ into an int64.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64+1)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > math.MaxInt64+1 {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true // MaxInt64+1 wraps to MinInt64, as wanted
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseFloat parses a decimal number: -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?
// (leading zeros allowed). Short plain decimals are converted without
// strconv; both operands are exact, so the division is correctly rounded.
func parseFloat(b []byte) (float64, bool) {
	i, n := 0, len(b)
	if i < n && b[i] == '-' {
		i++
	}
	var mant uint64
	digits, frac := 0, 0
	start := i
	for i < n && b[i] >= '0' && b[i] <= '9' {
		mant = mant*10 + uint64(b[i]-'0')
		i++
		digits++
	}
	if i == start {
		return 0, false
	}
	if i < n && b[i] == '.' {
		i++
		s := i
		for i < n && b[i] >= '0' && b[i] <= '9' {
			mant = mant*10 + uint64(b[i]-'0')
			i++
			digits++
		}
		if i == s {
			return 0, false
		}
		frac = i - s
	}
	simple := true
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		simple = false
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < n && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return 0, false
		}
	}
	if i != n {
		return 0, false
	}
	if simple && digits <= 15 {
		f := float64(mant) / pow10[frac]
		if b[0] == '-' {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, !math.IsInf(f, 0)
}
