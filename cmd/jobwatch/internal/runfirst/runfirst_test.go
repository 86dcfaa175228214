package runfirst

import (
	"reflect"
	"testing"

	"github.com/jobwatch/jobwatch/wrapper"
)

// defaults are the flags' values when none is given.
func defaults() wrapper.Flags {
	return wrapper.Flags{Log: wrapper.DefaultLog, Timeout: "0", KillAfter: wrapper.DefaultKillAfter.String(), SkipExitCode: "0",
		LockUnavailable: wrapper.UnavailableSkip, OnLockLost: wrapper.LostKill, RecordTable: wrapper.DefaultRecordTable}
}

func TestRunFirstParse(t *testing.T) {
	with := func(set func(*wrapper.Flags)) wrapper.Flags {
		f := defaults()
		set(&f)
		return f
	}
	tests := []struct {
		name string
		args []string
		want wrapper.Flags
		ok   bool
	}{
		{"separate values", []string{"run", "--job", "b", "--log", "/tmp/r.log", "--lock", "/tmp/l", "--timeout", "10s", "--", "true"},
			with(func(f *wrapper.Flags) {
				f.Job, f.Log, f.Lock, f.Timeout, f.Command = "b", "/tmp/r.log", "/tmp/l", "10s", []string{"true"}
			}), true},
		{"inline values, = and @ in a value", []string{"run", "--job=b", "--lock-name=a=b@c", "--record-table=", "--", "sh", "-c", "exit 3"},
			with(func(f *wrapper.Flags) {
				f.Job, f.LockName, f.RecordTable, f.Command = "b", "a=b@c", "", []string{"sh", "-c", "exit 3"}
			}), true},
		{"flags after -- are the command's", []string{"run", "--job", "b", "--", "cmd", "--job", "x", "--", "@f"},
			with(func(f *wrapper.Flags) { f.Job, f.Command = "b", []string{"cmd", "--job", "x", "--", "@f"} }), true},
		{"every flag that needs no server", []string{"run", "--job=j", "--log=l", "--lock=k", "--timeout=1", "--kill-after=2",
			"--skip-exit-code=3", "--lock-name=n", "--lock-ttl=t", "--lock-unavailable=run", "--on-lock-lost=warn",
			"--record-table=rt", "--", "c"},
			wrapper.Flags{Job: "j", Log: "l", Lock: "k", Timeout: "1", KillAfter: "2", SkipExitCode: "3",
				LockName: "n", LockTTL: "t", LockUnavailable: "run", OnLockLost: "warn",
				RecordTable: "rt", Command: []string{"c"}}, true},
		{"a repeatable flag, given twice", []string{"run", "--job", "b", "--skipped-exit", "75", "--skipped-exit=76",
			"--skipped-output", "^lock held", "--skipped-reason=locked", "--", "true"},
			with(func(f *wrapper.Flags) {
				f.Job, f.SkippedExit, f.SkippedOutput, f.SkippedReason, f.Command = "b", []string{"75", "76"}, "^lock held", "locked", []string{"true"}
			}), true},
		// Left to kingpin.
		{"no arguments", nil, wrapper.Flags{}, false},
		{"another command", []string{"serve", "--", "x"}, wrapper.Flags{}, false},
		{"a global flag first", []string{"--log.level=debug", "run", "--job", "b", "--", "true"}, wrapper.Flags{}, false},
		{"a global flag", []string{"run", "--log.level", "debug", "--job", "b", "--", "true"}, wrapper.Flags{}, false},
		{"help", []string{"run", "--help", "--", "true"}, wrapper.Flags{}, false},
		{"short help", []string{"run", "-h", "--", "true"}, wrapper.Flags{}, false},
		{"version", []string{"run", "--version", "--", "true"}, wrapper.Flags{}, false},
		{"unknown flag", []string{"run", "--jobs", "b", "--", "true"}, wrapper.Flags{}, false},
		{"repeated flag", []string{"run", "--job", "a", "--job=b", "--", "true"}, wrapper.Flags{}, false},
		{"command without --", []string{"run", "--job", "b", "true"}, wrapper.Flags{}, false},
		{"no command", []string{"run", "--job", "b", "--"}, wrapper.Flags{}, false},
		{"flag without value", []string{"run", "--job"}, wrapper.Flags{}, false},
		{"value like a flag", []string{"run", "--job", "--lock", "x", "--", "true"}, wrapper.Flags{}, false},
		{"value like a negative number", []string{"run", "--job", "b", "--timeout", "-1", "--", "true"}, wrapper.Flags{}, false},
		{"empty separate value", []string{"run", "--job", "", "--", "true"}, wrapper.Flags{}, false},
		{"file of arguments", []string{"run", "@args", "--", "true"}, wrapper.Flags{}, false},
		{"value from a file of arguments", []string{"run", "--job", "@args", "--", "true"}, wrapper.Flags{}, false},
		{"redis lock", []string{"run", "--job", "b", "--lock-redis", "redis://h:1/0", "--", "true"}, wrapper.Flags{}, false},
		{"redis password file", []string{"run", "--job", "b", "--lock-redis-password-file=p", "--", "true"}, wrapper.Flags{}, false},
		{"mysql lock", []string{"run", "--job", "b", "--lock-mysql=u@tcp(h)/", "--", "true"}, wrapper.Flags{}, false},
		{"mysql lock file", []string{"run", "--job", "b", "--lock-mysql-dsn-file=f", "--", "true"}, wrapper.Flags{}, false},
		{"table", []string{"run", "--job", "b", "--record-mysql", "u@tcp(h)/", "--", "true"}, wrapper.Flags{}, false},
		{"table file", []string{"run", "--job", "b", "--record-mysql-dsn-file", "f", "--", "true"}, wrapper.Flags{}, false},
		{"inline value from a file of arguments", []string{"run", "--job=@args", "--", "true"}, wrapper.Flags{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.args)
			if ok != tc.ok {
				t.Fatalf("Parse(%q) ok = %v, want %v", tc.args, ok, tc.ok)
			}
			if ok && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", tc.args, got, tc.want)
			}
		})
	}
}

// TestRunFirstParseRemote: the command lines Parse leaves out for their
// shared lock or table are ParseRemote's, and only those.
func TestRunFirstParseRemote(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"run", "--job", "b", "--lock-redis", "redis://h:1/0", "--lock-ttl=10s", "--", "true"}, true},
		{[]string{"run", "--job", "b", "--lock-mysql-dsn-file=f", "--", "true"}, true},
		{[]string{"run", "--job", "b", "--log=-", "--record-mysql", "u@tcp(h)/", "--", "true"}, true},
		{[]string{"run", "--job", "b", "--", "true"}, false},                            // Parse's
		{[]string{"run", "--job", "b", "--lock-redis", "redis://h:1/0", "true"}, false}, // kingpin's: no --
	} {
		f, ok := ParseRemote(tc.args)
		if ok != tc.ok {
			t.Errorf("ParseRemote(%q) ok = %v, want %v", tc.args, ok, tc.ok)
		}
		if _, plain := Parse(tc.args); plain && ok {
			t.Errorf("%q: both Parse and ParseRemote", tc.args)
		}
		if ok && (f.Job != "b" || len(f.Command) != 1) {
			t.Errorf("ParseRemote(%q) = %+v", tc.args, f)
		}
	}
}
