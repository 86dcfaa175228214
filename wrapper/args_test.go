package wrapper

import (
	"reflect"
	"testing"
)

// defaultFlags are the flags' values when none is given.
func defaultFlags() Flags {
	return Flags{Log: DefaultLog, Timeout: "0", KillAfter: DefaultKillAfter.String(), SkipExitCode: "0",
		LockUnavailable: UnavailableSkip, OnLockLost: LostKill, RecordTable: DefaultRecordTable}
}

func TestParseArgs(t *testing.T) {
	with := func(set func(*Flags)) Flags {
		f := defaultFlags()
		set(&f)
		return f
	}
	tests := []struct {
		name string
		args []string
		want Flags
		ok   bool
	}{
		{"separate values", []string{"--job", "b", "--log", "/tmp/r.log", "--lock", "/tmp/l", "--timeout", "10s", "--", "true"},
			with(func(f *Flags) {
				f.Job, f.Log, f.Lock, f.Timeout, f.Command = "b", "/tmp/r.log", "/tmp/l", "10s", []string{"true"}
			}), true},
		{"inline values, = and @ in a value", []string{"--job=b", "--lock-name=a=b@c", "--record-table=", "--", "sh", "-c", "exit 3"},
			with(func(f *Flags) {
				f.Job, f.LockName, f.RecordTable, f.Command = "b", "a=b@c", "", []string{"sh", "-c", "exit 3"}
			}), true},
		{"flags after -- are the command's", []string{"--job", "b", "--", "cmd", "--job", "x", "--", "@f"},
			with(func(f *Flags) { f.Job, f.Command = "b", []string{"cmd", "--job", "x", "--", "@f"} }), true},
		{"no flag", []string{"--", "true"}, with(func(f *Flags) { f.Command = []string{"true"} }), true},
		{"every flag that needs no server", []string{"--job=j", "--log=l", "--lock=k", "--timeout=1", "--kill-after=2",
			"--skip-exit-code=3", "--lock-name=n", "--lock-ttl=t", "--lock-unavailable=run", "--on-lock-lost=warn",
			"--record-table=rt", "--", "c"},
			Flags{Job: "j", Log: "l", Lock: "k", Timeout: "1", KillAfter: "2", SkipExitCode: "3",
				LockName: "n", LockTTL: "t", LockUnavailable: "run", OnLockLost: "warn",
				RecordTable: "rt", Command: []string{"c"}}, true},
		{"a repeatable flag, given twice", []string{"--job", "b", "--skipped-exit", "75", "--skipped-exit=76",
			"--skipped-output", "^lock held", "--skipped-reason=locked", "--", "true"},
			with(func(f *Flags) {
				f.Job, f.SkippedExit, f.SkippedOutput, f.SkippedReason, f.Command = "b", []string{"75", "76"}, "^lock held", "locked", []string{"true"}
			}), true},
		{"the servers' flags", []string{"--job", "b", "--lock-redis", "redis://h:1/0", "--lock-redis-password-file=p",
			"--lock-mysql=u@tcp(h)/", "--lock-mysql-dsn-file=f", "--record-mysql", "u@tcp(h)/", "--record-mysql-dsn-file", "g", "--", "true"},
			with(func(f *Flags) {
				f.Job, f.LockRedis, f.LockRedisPasswordFile, f.LockMySQL, f.LockMySQLDSNFile = "b", "redis://h:1/0", "p", "u@tcp(h)/", "f"
				f.RecordMySQL, f.RecordMySQLDSNFile, f.Command = "u@tcp(h)/", "g", []string{"true"}
			}), true},
		// Left to kingpin.
		{"no arguments", nil, Flags{}, false},
		{"a word before --", []string{"serve", "--", "x"}, Flags{}, false},
		{"a global flag", []string{"--log.level", "debug", "--job", "b", "--", "true"}, Flags{}, false},
		{"help", []string{"--help", "--", "true"}, Flags{}, false},
		{"short help", []string{"-h", "--", "true"}, Flags{}, false},
		{"version", []string{"--version", "--", "true"}, Flags{}, false},
		{"unknown flag", []string{"--jobs", "b", "--", "true"}, Flags{}, false},
		{"repeated flag", []string{"--job", "a", "--job=b", "--", "true"}, Flags{}, false},
		{"command without --", []string{"--job", "b", "true"}, Flags{}, false},
		{"no command", []string{"--job", "b", "--"}, Flags{}, false},
		{"flag without value", []string{"--job"}, Flags{}, false},
		{"value like a flag", []string{"--job", "--lock", "x", "--", "true"}, Flags{}, false},
		{"value like a negative number", []string{"--job", "b", "--timeout", "-1", "--", "true"}, Flags{}, false},
		{"empty separate value", []string{"--job", "", "--", "true"}, Flags{}, false},
		{"file of arguments", []string{"@args", "--", "true"}, Flags{}, false},
		{"value from a file of arguments", []string{"--job", "@args", "--", "true"}, Flags{}, false},
		{"inline value from a file of arguments", []string{"--job=@args", "--", "true"}, Flags{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseArgs(tc.args)
			if ok != tc.ok {
				t.Fatalf("ParseArgs(%q) ok = %v, want %v", tc.args, ok, tc.ok)
			}
			if ok && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseArgs(%q) =\n%+v\nwant\n%+v", tc.args, got, tc.want)
			}
		})
	}
}

// TestNeedsRemote: each flag of a shared lock or of the table, alone, needs
// package wrapper/remote; no other flag does.
func TestNeedsRemote(t *testing.T) {
	remote := map[string]bool{"lock-redis": true, "lock-redis-password-file": true, "lock-mysql": true,
		"lock-mysql-dsn-file": true, "record-mysql": true, "record-mysql-dsn-file": true}
	for _, fl := range RunFlagTable {
		f, ok := ParseArgs([]string{"--" + fl.Name + "=x", "--", "true"})
		if !ok {
			t.Fatalf("--%s=x: left to kingpin", fl.Name)
		}
		if got := f.NeedsRemote(); got != remote[fl.Name] {
			t.Errorf("--%s: NeedsRemote = %v, want %v", fl.Name, got, remote[fl.Name])
		}
	}
}
