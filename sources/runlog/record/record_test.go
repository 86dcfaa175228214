package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// formatEvent renders an event deterministically for golden files and test
// failures.
func formatEvent(ev model.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "time=%s job=%s event=%s", ev.Time.Format(time.RFC3339Nano), ev.Job, ev.Kind)
	if ev.Host != "" {
		fmt.Fprintf(&b, " host=%q", ev.Host)
	}
	if ev.PID != 0 {
		fmt.Fprintf(&b, " pid=%d", ev.PID)
	}
	if ev.RunID != "" {
		fmt.Fprintf(&b, " run_id=%q", ev.RunID)
	}
	if ev.Result != "" {
		fmt.Fprintf(&b, " result=%s", ev.Result)
	}
	if ev.HasExitCode {
		fmt.Fprintf(&b, " exit_code=%d", ev.ExitCode)
	}
	if ev.EndUnlogged {
		b.WriteString(" end_unlogged")
	}
	if ev.HasDuration {
		fmt.Fprintf(&b, " duration=%s", ev.Duration)
	}
	if ev.Reason != "" {
		fmt.Fprintf(&b, " reason=%q", ev.Reason)
	}
	if ev.SkipLabel != "" && ev.SkipLabel != ev.Reason {
		fmt.Fprintf(&b, " counted_as=%s", ev.SkipLabel)
	}
	if ev.Lock != "" {
		fmt.Fprintf(&b, " lock=%s", ev.Lock)
	}
	if ev.Holder != "" {
		fmt.Fprintf(&b, " holder=%q", ev.Holder)
	}
	if ev.HolderPID != 0 {
		fmt.Fprintf(&b, " holder_pid=%d", ev.HolderPID)
	}
	if ev.LockTTL != 0 {
		fmt.Fprintf(&b, " lock_ttl=%s", ev.LockTTL)
	}
	if loc := ev.Time.Location(); loc != time.UTC {
		fmt.Fprintf(&b, " loc=%s", loc)
	}
	return b.String()
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

var (
	t0          = mustTime("2026-11-30T10:00:00.123Z")
	t1          = mustTime("2026-11-30T10:00:40.5Z")
	t2          = mustTime("2026-11-30T11:00:00.01Z")
	shanghai, _ = time.LoadLocation("Asia/Shanghai")
)

var (
	startEv = model.Event{Time: t0, Job: "stats", Kind: model.Start, Host: "web1", PID: 4242, RunID: "optional"}
	endEv   = model.Event{Time: t1, Job: "stats", Kind: model.End, Host: "web1", PID: 4242, Result: model.Success,
		ExitCode: 0, HasExitCode: true, Duration: 40400 * time.Millisecond, HasDuration: true}
	skipEv = model.Event{Time: t2, Job: "stats", Kind: model.Skip, Host: "web1", PID: 4300, Reason: "locked", SkipLabel: "locked", HolderPID: 4242}
	minEv  = model.Event{Time: t0, Job: "stats", Kind: model.Start}
)

func with(ev model.Event, f func(*model.Event)) *model.Event {
	f(&ev)
	return &ev
}

// ruleCase is one rule checked on the same record in JSON and logfmt form;
// an empty form is not applicable. want nil means an error containing err.
type ruleCase struct {
	name   string
	json   string
	logfmt string
	opts   Options
	want   *model.Event
	err    string
}

const (
	jsonStart = `{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"start","host":"web1","pid":4242,"run_id":"optional"}`
	jsonEnd   = `{"time":"2026-11-30T10:00:40.500Z","job":"stats","event":"end","host":"web1","pid":4242,"status":"success","exit_code":0,"duration_seconds":40.4}`
	jsonSkip  = `{"time":"2026-11-30T11:00:00.010Z","job":"stats","event":"skip","host":"web1","pid":4300,"reason":"locked","holder_pid":4242}`
	lfStart   = `time=2026-11-30T10:00:00.123Z job=stats event=start host=web1 pid=4242 run_id=optional`
	lfEnd     = `time=2026-11-30T10:00:40.500Z job=stats event=end host=web1 pid=4242 status=success exit_code=0 duration_seconds=40.4`
	lfSkip    = `time=2026-11-30T11:00:00.010Z job=stats event=skip host=web1 pid=4300 reason=locked holder_pid=4242`
	jsonMin   = `{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"start"`
	lfMin     = `time=2026-11-30T10:00:00.123Z job=stats event=start`
)

// j and l build a minimal start record with extra members/pairs.
func j(extra string) string { return jsonMin + extra + "}" }
func l(extra string) string { return lfMin + " " + extra }

var long = func(n int) string { return strings.Repeat("a", n) }

var ruleCases = []ruleCase{
	// Valid records.
	{name: "start", json: jsonStart, logfmt: lfStart, want: &startEv},
	{name: "end", json: jsonEnd, logfmt: lfEnd, want: &endEv},
	{name: "skip", json: jsonSkip, logfmt: lfSkip, want: &skipEv},
	{name: "minimal", json: j(""), logfmt: lfMin, want: &minEv},
	{name: "unknown keys ignored",
		json:   j(`,"level":"info","n":-1.5e3,"b":true,"f":false,"z":null,"s":"x\ty\u00e9"`),
		logfmt: l(`level=info msg="hello world" flag n=1.5e3`), want: &minEv},
	{name: "duplicate key last wins", json: j(`,"job":"other"`), logfmt: l("job=other"),
		want: with(minEv, func(e *model.Event) { e.Job = "other" })},
	{name: "duplicate key earlier invalid value", json: j(`,"pid":"x","pid":5`), logfmt: l("pid=x pid=5"),
		want: with(minEv, func(e *model.Event) { e.PID = 5 })},
	{name: "pid numeric string", json: j(`,"pid":"4242"`), logfmt: l(`pid="4242"`),
		want: with(minEv, func(e *model.Event) { e.PID = 4242 })},
	{name: "pid zero", json: j(`,"pid":0`), logfmt: l("pid=0"), want: &minEv},
	{name: "pid max", json: j(`,"pid":2147483647`), logfmt: l("pid=2147483647"),
		want: with(minEv, func(e *model.Event) { e.PID = 2147483647 })},
	{name: "end exit code negative and string duration",
		json:   `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"failure","exit_code":-1,"duration_seconds":"2.5"}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=failure exit_code=-1 duration_seconds=2.5`,
		want: &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Failure, ExitCode: -1, HasExitCode: true,
			Duration: 2500 * time.Millisecond, HasDuration: true}},
	{name: "end without exit code and duration",
		json:   `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"timeout"}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=timeout`,
		want:   &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Timeout}},
	{name: "end exit code string, duration exponent and zero",
		json:   `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"success","exit_code":"3","duration_seconds":4.04E1}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=success exit_code="3" duration_seconds=4.04e+1`,
		want: &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Success, ExitCode: 3, HasExitCode: true,
			Duration: 40400 * time.Millisecond, HasDuration: true}},
	{name: "duration zero",
		json:   `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"success","duration_seconds":0}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=success duration_seconds=-0`,
		want:   &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Success, HasDuration: true}},
	{name: "fields of other kinds checked but not kept",
		json:   j(`,"status":"failure","exit_code":1,"duration_seconds":1,"reason":"r","holder_pid":7`),
		logfmt: l(`status=failure exit_code=1 duration_seconds=1 reason=r holder_pid=7`), want: &minEv},
	{name: "time with offset",
		json:   `{"time":"2026-11-30T18:00:00.123+08:00","job":"stats","event":"start"}`,
		logfmt: `time=2026-11-30T04:30:00.123-05:30 job=stats event=start`, want: &minEv},
	{name: "time offset wins over location", opts: Options{Location: shanghai},
		json: `{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"start"}`, logfmt: lfMin, want: &minEv},
	{name: "time without offset in location", opts: Options{Location: shanghai},
		json:   `{"time":"2026-11-30T18:00:00.123","job":"stats","event":"start"}`,
		logfmt: `time="2026-11-30 18:00:00.123" job=stats event=start`, want: &minEv},
	{name: "time without offset default UTC",
		json:   `{"time":"2026-11-30T10:00:00.123","job":"stats","event":"start"}`,
		logfmt: `time=2026-11-30t10:00:00.123z job=stats event=start`, want: &minEv},
	{name: "time without fraction",
		json:   `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"start"}`,
		logfmt: `time=2026-11-30T10:00:00Z job=stats event=start`,
		want:   with(minEv, func(e *model.Event) { e.Time = mustTime("2026-11-30T10:00:00Z") })},
	{name: "time fraction past nanoseconds dropped",
		json:   `{"time":"2026-11-30T10:00:00.123000000999Z","job":"stats","event":"start"}`,
		logfmt: `time=2026-11-30T10:00:00.1230000009+00:00 job=stats event=start`, want: &minEv},
	{name: "custom time format", opts: Options{TimeFormat: "2006-01-02 15:04:05.000", Location: shanghai},
		json:   `{"time":"2026-11-30 18:00:00.123","job":"stats","event":"start"}`,
		logfmt: `time="2026-11-30 18:00:00.123" job=stats event=start`, want: &minEv},
	{name: "custom time format with zone", opts: Options{TimeFormat: time.RFC1123Z, Location: shanghai},
		json:   `{"time":"Mon, 30 Nov 2026 10:00:00 +0000","job":"stats","event":"start"}`,
		logfmt: `time="Mon, 30 Nov 2026 10:00:00 +0000" job=stats event=start`,
		want:   with(minEv, func(e *model.Event) { e.Time = mustTime("2026-11-30T10:00:00Z") })},
	{name: "escapes",
		json:   `{"time":"2026-11-30T11:00:00.01Z","j\u006fb":"st\u0061ts","event":"skip","host":"w\u00e9b\/1","reason":"l\u006fcked","holder":"\"l\\ocked\" \ud83d\ude00 \ud800x"}`,
		logfmt: `time=2026-11-30T11:00:00.01Z job="st\u0061ts" event=skip host="w\u00e9b\/1" reason="l\u006fcked" holder="\"l\\ocked\" \ud83d\ude00 \ud800x"`,
		want:   &model.Event{Time: t2, Job: "stats", Kind: model.Skip, Host: "wéb/1", Reason: "locked", SkipLabel: "locked", Holder: "\"l\\ocked\" 😀 \uFFFDx"}},
	{name: "raw UTF-8", json: j(`,"host":"wéb-😀"`), logfmt: l(`host=wéb-😀`),
		want: with(minEv, func(e *model.Event) { e.Host = "wéb-😀" })},
	{name: "null and empty are absent", json: j(`,"host":null,"run_id":"","pid":null,"exit_code":""`),
		logfmt: l(`host= run_id="" pid= exit_code`), want: &minEv},
	{name: "whitespace", json: " \t{ \"time\" : \"2026-11-30T10:00:00.123Z\" ,\n\"job\":\"stats\", \"event\" :\"start\" } \r",
		logfmt: " \ttime=2026-11-30T10:00:00.123Z\t job=stats  event=start \r", want: &minEv},
	{name: "job charset and length", json: j(`,"job":"_a.b:c-d_` + long(119) + `"`), logfmt: l("job=_a.b:c-d_" + long(119)),
		want: with(minEv, func(e *model.Event) { e.Job = "_a.b:c-d_" + long(119) })},
	{name: "host and run_id max length", json: j(`,"host":"` + long(255) + `","run_id":"` + long(128) + `"`),
		logfmt: l("host=" + long(255) + " run_id=" + long(128)),
		want:   with(minEv, func(e *model.Event) { e.Host, e.RunID = long(255), long(128) })},

	// Missing and wrong values.
	{name: "empty", json: "", logfmt: " ", err: "empty line"},
	{name: "empty object", json: "{}", logfmt: "flag", err: "time is required"},
	{name: "no time", json: `{"job":"stats","event":"start"}`, logfmt: `job=stats event=start`, err: "time is required"},
	{name: "no job", json: `{"time":"2026-11-30T10:00:00Z","event":"start"}`, logfmt: `time=2026-11-30T10:00:00Z event=start`, err: "job is required"},
	{name: "no event", json: `{"time":"2026-11-30T10:00:00Z","job":"stats"}`, logfmt: `time=2026-11-30T10:00:00Z job=stats`, err: "event is required"},
	{name: "null required", json: `{"time":null,"job":"stats","event":"start"}`, logfmt: `time= job=stats event=start`, err: "time is required"},
	{name: "bad event", json: `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"stop"}`, logfmt: `time=2026-11-30T10:00:00Z job=stats event=stop`, err: `event: must be start, end, skip or lock_lost, got "stop"`},
	{name: "event case", json: `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"Start"}`, logfmt: `time=2026-11-30T10:00:00Z job=stats event=Start`, err: `event: must be`},
	{name: "end without status", json: `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end"}`, logfmt: `time=2026-11-30T10:00:00Z job=stats event=end`, err: "status is required for event end"},
	{name: "bad status", json: j(`,"status":"ok"`), logfmt: l("status=ok"), err: `status: must be success, failure, timeout or skipped, got "ok"`},
	{name: "status lost not accepted", json: j(`,"status":"lost"`), logfmt: l("status=lost"), err: `status: must be`},
	{name: "bad time", json: `{"time":"yesterday","job":"stats","event":"start"}`, logfmt: `time=yesterday job=stats event=start`, err: `time: not an RFC 3339 time: "yesterday"`},
	{name: "time month 13", json: `{"time":"2026-13-01T00:00:00Z","job":"stats","event":"start"}`, logfmt: `time=2026-13-01T00:00:00Z job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time Feb 30", json: `{"time":"2026-02-29T00:00:00Z","job":"stats","event":"start"}`, logfmt: `time=2026-02-30T00:00:00Z job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time hour 24", json: `{"time":"2026-11-30T24:00:00Z","job":"stats","event":"start"}`, logfmt: `time=2026-11-30T23:60:00Z job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time leap second", json: `{"time":"2026-12-31T23:59:60Z","job":"stats","event":"start"}`, logfmt: `time=2026-12-31T23:59:60Z job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time bad offset", json: `{"time":"2026-11-30T10:00:00+24:00","job":"stats","event":"start"}`, logfmt: `time=2026-11-30T10:00:00+0800 job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time trailing", json: `{"time":"2026-11-30T10:00:00Zx","job":"stats","event":"start"}`, logfmt: `time=2026-11-30T10:00:00. job=stats event=start`, err: "time: not an RFC 3339"},
	{name: "time zero", json: `{"time":"0001-01-01T00:00:00Z","job":"stats","event":"start"}`, logfmt: `time=0001-01-01T00:00:00Z job=stats event=start`, err: "time: out of range"},
	{name: "time year 10000 in UTC", json: `{"time":"9999-12-31T23:59:59-01:00","job":"stats","event":"start"}`, logfmt: `time=0001-01-01T00:30:00+01:00 job=stats event=start`, err: "time: out of range"},
	{name: "time as number", json: `{"time":1764496800,"job":"stats","event":"start"}`, err: "time: must be a string"},
	{name: "custom layout mismatch", opts: Options{TimeFormat: "2006-01-02 15:04:05.000"},
		json: `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"start"}`, logfmt: lfMin, err: `does not match layout "2006-01-02 15:04:05.000"`},
	{name: "custom layout without year", opts: Options{TimeFormat: time.Stamp},
		json: `{"time":"Nov 30 10:00:00","job":"stats","event":"start"}`, logfmt: `time="Nov 30 10:00:00" job=stats event=start`, err: `has no year`},
	{name: "job starts with digit", json: j(`,"job":"1stats"`), logfmt: l("job=1stats"), err: `job: "1stats" must match`},
	{name: "job starts with dash", json: j(`,"job":"-x"`), logfmt: l("job=-x"), err: `job: "-x" must match`},
	{name: "job with space", json: j(`,"job":"st ats"`), logfmt: l(`job="st ats"`), err: `must match`},
	{name: "job with unicode", json: j(`,"job":"stäts"`), logfmt: l(`job=stäts`), err: `must match`},
	{name: "job too long", json: j(`,"job":"` + long(129) + `"`), logfmt: l("job=" + long(129)), err: "job: longer than 128 bytes"},
	{name: "job as number", json: j(`,"job":123`), err: `job: must be a string, got "123"`},
	{name: "event as bool", json: j(`,"event":true`), err: `event: must be a string, got "true"`},
	{name: "host too long", json: j(`,"host":"` + long(256) + `"`), logfmt: l("host=" + long(256)), err: "host: longer than 255 bytes"},
	{name: "host control char", json: j(`,"host":"a\u0000b"`), logfmt: l(`host="a\u0001b"`), err: "host: contains a control character"},
	{name: "host as number", json: j(`,"host":1`), err: "host: must be a string"},
	{name: "run_id too long", json: j(`,"run_id":"` + long(129) + `"`), logfmt: l("run_id=" + long(129)), err: "run_id: longer than 128 bytes"},
	{name: "reason too long", json: j(`,"reason":"` + long(256) + `"`), logfmt: l("reason=" + long(256)), err: "reason: longer than 255 bytes"},
	{name: "reason newline", json: j(`,"reason":"a\nb"`), logfmt: l(`reason="a\nb"`), err: "reason: contains a control character"},
	{name: "pid not a number", json: j(`,"pid":"abc"`), logfmt: l("pid=abc"), err: `pid: not an integer: "abc"`},
	{name: "pid fraction", json: j(`,"pid":1.5`), logfmt: l("pid=1.5"), err: `pid: not an integer: "1.5"`},
	{name: "pid exponent", json: j(`,"pid":1e3`), logfmt: l("pid=1e3"), err: `pid: not an integer`},
	{name: "pid plus sign", json: j(`,"pid":"+1"`), logfmt: l("pid=+1"), err: `pid: not an integer`},
	{name: "pid negative", json: j(`,"pid":-1`), logfmt: l("pid=-1"), err: `pid: out of range: "-1"`},
	{name: "pid too large", json: j(`,"pid":2147483648`), logfmt: l("pid=2147483648"), err: `pid: out of range`},
	{name: "pid overflow", json: j(`,"pid":99999999999999999999`), logfmt: l("pid=99999999999999999999"), err: `pid: not an integer`},
	{name: "lock ttl", json: j(`,"lock_ttl_seconds":90`), logfmt: l("lock_ttl_seconds=90"),
		want: with(minEv, func(e *model.Event) { e.LockTTL = 90 * time.Second })},
	{name: "lock ttl fraction and string", json: j(`,"lock_ttl_seconds":"1.5"`), logfmt: l(`lock_ttl_seconds="1.5"`),
		want: with(minEv, func(e *model.Event) { e.LockTTL = 1500 * time.Millisecond })},
	{name: "lock ttl max", json: j(`,"lock_ttl_seconds":31536000`), logfmt: l("lock_ttl_seconds=3.1536e7"),
		want: with(minEv, func(e *model.Event) { e.LockTTL = MaxLockTTL })},
	{name: "lock ttl null and empty are absent", json: j(`,"lock_ttl_seconds":null`), logfmt: l("lock_ttl_seconds="), want: &minEv},
	{name: "lock ttl checked but not kept on an end",
		json:   `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"timeout","lock_ttl_seconds":60}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=timeout lock_ttl_seconds=60`,
		want:   &model.Event{Time: t1, Job: "stats", Kind: model.End, Result: model.Timeout}},
	{name: "lock ttl zero", json: j(`,"lock_ttl_seconds":0`), logfmt: l("lock_ttl_seconds=-0"), err: `lock_ttl_seconds: not positive: "`},
	{name: "lock ttl negative", json: j(`,"lock_ttl_seconds":-5`), logfmt: l("lock_ttl_seconds=-5"), err: `lock_ttl_seconds: not positive: "-5"`},
	{name: "lock ttl too long", json: j(`,"lock_ttl_seconds":31536000.001`), logfmt: l("lock_ttl_seconds=1e300"), err: `lock_ttl_seconds: longer than 31536000 seconds: "`},
	{name: "lock ttl not a number", json: j(`,"lock_ttl_seconds":"90s"`), logfmt: l("lock_ttl_seconds=90s"), err: `lock_ttl_seconds: not a number: "90s"`},
	{name: "lock ttl bad on an end", json: `{"time":"2026-11-30T10:00:40.5Z","job":"stats","event":"end","status":"success","lock_ttl_seconds":"x"}`,
		logfmt: `time=2026-11-30T10:00:40.5Z job=stats event=end status=success lock_ttl_seconds=x`, err: `lock_ttl_seconds: not a number: "x"`},
	{name: "lock ttl bool", json: j(`,"lock_ttl_seconds":true`), err: `lock_ttl_seconds: must be a number, got "true"`},
	{name: "pid bool", json: j(`,"pid":true`), err: `pid: must be a number, got "true"`},
	{name: "pid escaped numeric string", json: j(`,"pid":"\u0034"`), want: with(minEv, func(e *model.Event) { e.PID = 4 })},
	{name: "holder_pid bad", json: j(`,"holder_pid":"x"`), logfmt: l("holder_pid=x"), err: `holder_pid: not an integer`},
	{name: "exit_code bad", json: j(`,"exit_code":"x"`), logfmt: l("exit_code=x"), err: `exit_code: not an integer`},
	{name: "exit_code out of int32", json: j(`,"exit_code":3000000000`), logfmt: l("exit_code=-3000000000"), err: `exit_code: out of range`},
	{name: "duration negative", json: j(`,"duration_seconds":-1`), logfmt: l("duration_seconds=-0.5"), err: `duration_seconds: negative`},
	{name: "duration not a number", json: j(`,"duration_seconds":"1s"`), logfmt: l("duration_seconds=1s"), err: `duration_seconds: not a number: "1s"`},
	{name: "duration NaN", json: j(`,"duration_seconds":"NaN"`), logfmt: l("duration_seconds=Inf"), err: `duration_seconds: not a number`},
	{name: "duration too large", json: j(`,"duration_seconds":1e300`), logfmt: l("duration_seconds=9300000000"), err: `duration_seconds: too large`},
	{name: "duration overflow", json: j(`,"duration_seconds":1e400`), logfmt: l("duration_seconds=1e400"), err: `duration_seconds: not a number`},
	{name: "duration bool", json: j(`,"duration_seconds":false`), err: `duration_seconds: must be a number`},
	{name: "invalid UTF-8", json: j(`,"host":"a` + "\xff" + `"`), logfmt: l("host=a\xff"), err: "invalid UTF-8"},
	{name: "invalid UTF-8 in unknown key", json: j(`,"x` + "\xc3" + `":1`), logfmt: l("x\xc3=1"), err: "invalid UTF-8"},
	{name: "NUL byte", json: j(`,"host":"a` + "\x00" + `"`), logfmt: l("host=a\x00b"), err: "control character"},
	{name: "NUL byte between pairs", json: jsonMin + "\x00}", logfmt: lfMin + "\x00", err: "offset"},
	{name: "binary garbage", json: "\x01\x02\x03\xfe", logfmt: "\x01\x02\x03", err: "record:"},
}

// jsonOnlyCases are syntax errors of the JSON form.
var jsonOnlyCases = []struct{ name, line, err string }{
	{"truncated string", `{"time":"2026`, "truncated string"},
	{"truncated after comma", `{"time":"2026-11-30T10:00:00Z",`, "truncated"},
	{"truncated after colon", `{"time":`, "truncated"},
	{"truncated after key", `{"time"`, "truncated"},
	{"truncated after value", `{"time":"x"`, "truncated"},
	{"truncated literal", `{"b":tru`, "expected a value"},
	{"truncated escape", `{"a":"\`, "truncated string"},
	{"truncated unicode escape", `{"a":"\u12`, "truncated string"},
	{"open brace only", `{`, "truncated"},
	{"nested object", j(`,"labels":{"a":"b"}`), "nested object or array"},
	{"nested array", j(`,"tags":["a"]`), "nested object or array"},
	{"nested object under known key", `{"job":{"name":"stats"}}`, "nested object or array"},
	{"array", `[1,2]`, "expected '{'"},
	{"string", `"stats"`, "expected '{'"},
	{"number", `42`, "expected '{'"},
	{"data after object", jsonStart + ` x`, "data after the object"},
	{"two objects", jsonStart + jsonStart, "data after the object"},
	{"bad escape", j(`,"a":"\x41"`), "bad escape"},
	{"bad unicode escape", j(`,"a":"\u12G4"`), `bad \u escape`},
	{"raw tab in string", j(`,"a":"x` + "\t" + `y"`), "control character in string"},
	{"raw newline in string", j(`,"a":"x` + "\n" + `y"`), "control character in string"},
	{"leading zero", j(`,"pid":0123`), "expected ',' or '}'"},
	{"minus alone", j(`,"pid":-`), "bad number"},
	{"fraction without digits", j(`,"pid":1.`), "bad number"},
	{"exponent without digits", j(`,"pid":1e+`), "bad number"},
	{"plus sign", j(`,"pid":+1`), "expected a value"},
	{"trailing comma", `{"time":"x",}`, "expected a string key"},
	{"missing colon", `{"time" "x"}`, "expected ':'"},
	{"missing comma", `{"time":"x" "job":"y"}`, "expected ',' or '}'"},
	{"single quotes", `{'time':'x'}`, "expected a string key"},
	{"unquoted key", `{time:"x"}`, "expected a string key"},
	{"bare word value", j(`,"a":nul`), "expected a value"},
	{"BOM", "\ufeff" + jsonStart, "expected '{'"},
	{"NaN", j(`,"duration_seconds":NaN`), "expected a value"},
}

var logfmtOnlyCases = []struct{ name, line, err string }{
	{"unterminated quote", l(`reason="locked`), "bad quoted value"},
	{"quote in bare value", l(`reason=lo"cked`), `unexpected '"'`},
	{"text after quoted value", l(`reason="a"b`), `unexpected '"'`},
	{"quoted key", l(`"reason"=x`), "expected a key"},
	{"quote after key", l(`reason"x"`), `unexpected '"'`},
	{"no key", l(`=x`), "expected a key"},
	{"bad escape in quoted value", l(`reason="\q"`), "bad quoted value"},
	{"control character in key", l("rea\x01son=x"), "control character"},
	{"json line", jsonStart, `unexpected '"'`},
}

func checkCase(t *testing.T, p Parser, line string, want *model.Event, wantErr string) {
	t.Helper()
	var ev model.Event
	ev.Job = "leftover"
	err := p.Parse([]byte(line), &ev)
	if want == nil {
		if err == nil {
			t.Fatalf("Parse(%q) = %s, want error containing %q", line, formatEvent(ev), wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Parse(%q) error = %q, want it to contain %q", line, err, wantErr)
		}
		if len(err.Error()) > 130 {
			t.Errorf("error too long (%d bytes): %q", len(err.Error()), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse(%q): %v", line, err)
	}
	if got, w := formatEvent(ev), formatEvent(*want); got != w {
		t.Fatalf("Parse(%q)\n got %s\nwant %s", line, got, w)
	}
	if ev != *want {
		t.Fatalf("Parse(%q) = %+v, want %+v", line, ev, *want)
	}
}

func TestRules(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.json == "" && tc.logfmt == "" {
				t.Fatal("case has no line")
			}
			if tc.json != "" || tc.name == "empty" {
				t.Run("json", func(t *testing.T) { checkCase(t, NewJSON(tc.opts), tc.json, tc.want, tc.err) })
			}
			if tc.logfmt != "" {
				t.Run("logfmt", func(t *testing.T) { checkCase(t, NewLogfmt(tc.opts), tc.logfmt, tc.want, tc.err) })
			}
		})
	}
}

func TestJSONSyntax(t *testing.T) {
	p := NewJSON(Options{})
	for _, tc := range jsonOnlyCases {
		t.Run(tc.name, func(t *testing.T) { checkCase(t, p, tc.line, nil, tc.err) })
	}
}

func TestLogfmtSyntax(t *testing.T) {
	p := NewLogfmt(Options{})
	for _, tc := range logfmtOnlyCases {
		t.Run(tc.name, func(t *testing.T) { checkCase(t, p, tc.line, nil, tc.err) })
	}
}

func TestErrEmpty(t *testing.T) {
	var ev model.Event
	for _, p := range []Parser{NewJSON(Options{}), NewLogfmt(Options{})} {
		for _, line := range []string{"", " ", "\t\r"} {
			if err := p.Parse([]byte(line), &ev); !errors.Is(err, ErrEmpty) {
				t.Errorf("%T.Parse(%q) = %v, want ErrEmpty", p, line, err)
			}
		}
	}
}

// A parser is reused line after line: nothing of an earlier line may leak
// into the next, and the event must not alias the caller's buffer.
func TestReuseAndNoAliasing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Parser
		lines []string
	}{
		{"json", NewJSON(Options{}), []string{jsonStart, jsonEnd, jsonSkip, j("")}},
		{"logfmt", NewLogfmt(Options{}), []string{lfStart, lfEnd, lfSkip, lfMin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 0, 512)
			var got []model.Event
			for _, line := range tc.lines {
				buf = append(buf[:0], line...)
				var ev model.Event
				if err := tc.p.Parse(buf, &ev); err != nil {
					t.Fatal(err)
				}
				for i := range buf {
					buf[i] = 'X'
				}
				got = append(got, ev)
			}
			want := []model.Event{startEv, endEv, skipEv, minEv}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("line %d: got %s, want %s", i, formatEvent(got[i]), formatEvent(want[i]))
				}
			}
		})
	}
}

func TestNoAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Parser
		line string
		max  float64
	}{
		{"json end", NewJSON(Options{}), jsonEnd, 0},
		{"json skip", NewJSON(Options{}), jsonSkip, 0},
		{"json start with run_id", NewJSON(Options{}), jsonStart, 1},
		{"json escaped job", NewJSON(Options{}), j(`,"job":"st\u0061ts"`), 0},
		{"logfmt end", NewLogfmt(Options{}), lfEnd, 0},
		{"logfmt skip", NewLogfmt(Options{}), lfSkip, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := []byte(tc.line)
			var ev model.Event
			if err := tc.p.Parse(line, &ev); err != nil {
				t.Fatal(err)
			}
			n := testing.AllocsPerRun(100, func() {
				if err := tc.p.Parse(line, &ev); err != nil {
					t.Fatal(err)
				}
			})
			if n > tc.max {
				t.Errorf("%v allocations per line, want at most %v", n, tc.max)
			}
		})
	}
}

func TestInternerBounded(t *testing.T) {
	p := NewJSON(Options{}).(*jsonParser)
	var ev model.Event
	for i := range 3 * maxIntern {
		line := fmt.Sprintf(`{"time":"2026-11-30T10:00:00Z","job":"job%d","event":"start","host":"h%d"}`, i, i)
		if err := p.Parse([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("job%d", i); ev.Job != want {
			t.Fatalf("job = %q, want %q", ev.Job, want)
		}
	}
	if n := len(p.jobs.m); n > maxIntern {
		t.Errorf("job intern table has %d entries, want at most %d", n, maxIntern)
	}
	if n := len(p.hosts.m); n > maxIntern {
		t.Errorf("host intern table has %d entries, want at most %d", n, maxIntern)
	}
}

func TestNew(t *testing.T) {
	pats := []Pattern{{Regex: `^(?P<time>\S+) (?P<job>\S+) (?P<event>\S+)$`}}
	for _, tc := range []struct {
		format string
		pats   []Pattern
		want   string // %T of the parser, or error text
	}{
		{"json", nil, "*record.jsonParser"},
		{"logfmt", nil, "*record.logfmtParser"},
		{"regex", pats, "*record.regexParser"},
		{"regex", nil, "needs at least one pattern"},
		{"json", pats, "patterns are only for format regex"},
		{"csv", nil, `unknown format "csv"`},
	} {
		p, err := New(tc.format, tc.pats, Options{})
		got := fmt.Sprintf("%T", p)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("New(%q) = %s, want %s", tc.format, got, tc.want)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, s := range []string{"0", "1", "40.4", "0.1", "123456789012345", "1234567890123456789", "1.5e3", "1e-3",
		"-2.25", "007.5", "0.000000000000001", "9007199254740993"} {
		got, ok := parseFloat([]byte(s))
		w, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || got != w {
			t.Errorf("parseFloat(%q) = %v, %v; want %v", s, got, ok, w)
		}
	}
	for _, s := range []string{"", "-", ".5", "5.", "1e", "1e+", "0x10", "1_0", "inf", "NaN", "+1", " 1", "1 "} {
		if got, ok := parseFloat([]byte(s)); ok {
			t.Errorf("parseFloat(%q) = %v, want failure", s, got)
		}
	}
}

func TestFromConfig(t *testing.T) {
	p, err := FromConfig(Config{Format: "logfmt", Timezone: "Asia/Shanghai"})
	if err != nil {
		t.Fatal(err)
	}
	checkCase(t, p, `time="2026-11-30 18:00:00.123" job=stats event=start`, &minEv, "")
	if _, err := FromConfig(Config{Format: "json", Timezone: "Mars/Olympus"}); err == nil || !strings.Contains(err.Error(), `timezone "Mars/Olympus"`) {
		t.Errorf("unknown timezone: err = %v", err)
	}
	if _, err := FromConfig(Config{Format: "xml"}); err == nil {
		t.Error("unknown format: no error")
	}
}

// A holder and a lock that both need unescaping: the holder is kept as it
// was read, not as the scratch buffer holds it after the lock.
func TestHolderKeptPastLaterEscapes(t *testing.T) {
	line := `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"skip","host":"web1","pid":7,"reason":"locked","holder":"a\u0062cdef","lock":"\u0072edis"}`
	var ev model.Event
	if err := NewJSON(Options{}).Parse([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Holder != "abcdef" || ev.Lock != "redis" {
		t.Fatalf("holder %q lock %q, want abcdef and redis", ev.Holder, ev.Lock)
	}
}
