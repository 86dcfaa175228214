package discover

import (
	"strings"
	"testing"
	"time"
)

func TestParseCronLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		system  bool
		want    CronLine
		wantErr string
	}{
		{name: "blank", line: "   ", want: CronLine{Kind: LineBlank}},
		{name: "comment", line: "  # 0 2 * * * root x", want: CronLine{Kind: LineBlank}},
		{name: "env", line: "MAILTO=ops@example.com", want: CronLine{Kind: LineEnv, Name: "MAILTO", Value: "ops@example.com"}},
		{name: "env spaces and quotes", line: `  PATH = "/usr/bin:/bin"  `, want: CronLine{Kind: LineEnv, Name: "PATH", Value: "/usr/bin:/bin"}},
		{name: "env empty value", line: `MAILTO=""`, want: CronLine{Kind: LineEnv, Name: "MAILTO"}},
		{name: "CRON_TZ", line: "CRON_TZ=Europe/Berlin", want: CronLine{Kind: LineEnv, Name: "CRON_TZ", Value: "Europe/Berlin"}},
		{name: "user crontab job", line: "*/5 * * * * /usr/bin/poll --fast",
			want: CronLine{Kind: LineJob, Schedule: "*/5 * * * *", Command: "/usr/bin/poll --fast"}},
		{name: "system job with tabs", line: "17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly", system: true,
			want: CronLine{Kind: LineJob, Schedule: "17 * * * *", User: "root", Command: "cd / && run-parts --report /etc/cron.hourly"}},
		{name: "assignment in the command is not an env line", line: "0 2 * * * FOO=1 /bin/x",
			want: CronLine{Kind: LineJob, Schedule: "0 2 * * *", Command: "FOO=1 /bin/x"}},
		{name: "shortcut", line: "@daily root /bin/x", system: true,
			want: CronLine{Kind: LineJob, Schedule: "@daily", User: "root", Command: "/bin/x"}},
		{name: "reboot", line: "@reboot /bin/agent", want: CronLine{Kind: LineJob, Schedule: "@reboot", Reboot: true, Command: "/bin/agent"}},
		{name: "names", line: "0 9 * jan-mar mon-fri /bin/x", want: CronLine{Kind: LineJob, Schedule: "0 9 * jan-mar mon-fri", Command: "/bin/x"}},
		{name: "percent cuts the command", line: `0 1 * * * tar czf /a-$(date +%F).tgz /srv%line one%line two`,
			want: CronLine{Kind: LineJob, Schedule: "0 1 * * *", Command: "tar czf /a-$(date +", Stdin: "F).tgz /srv\nline one\nline two", Percent: true}},
		{name: "escaped percent", line: `0 1 * * * date +\%F`,
			want: CronLine{Kind: LineJob, Schedule: "0 1 * * *", Command: "date +%F"}},
		{name: "bad minute", line: "61 * * * * /bin/x", wantErr: `schedule: "61 * * * *": `},
		{name: "bad step", line: "*/0 * * * * /bin/x", wantErr: `schedule: "*/0 * * * *": `},
		{name: "unknown shortcut", line: "@fortnightly /bin/x", wantErr: `schedule: "@fortnightly": `},
		{name: "too few fields", line: "0 2 * *", wantErr: "want 5 schedule fields"},
		{name: "no command", line: "0 2 * * *  ", wantErr: "no command"},
		{name: "system line without user", line: "0 2 * * *", system: true, wantErr: "no user name"},
		{name: "system line, user but no command", line: "0 2 * * * root", system: true, wantErr: "no command"},
		{name: "command only a percent", line: "0 2 * * * %input", wantErr: "before the first unescaped %"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCronLine(tc.line, tc.system)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCronIgnores(t *testing.T) {
	tests := []struct {
		flavour Flavour
		name    string
		ignored bool
	}{
		{Debian, "backup", false},
		{Debian, "php_sessions-clean", false},
		{Debian, "backup.sh", true},
		{Debian, "backup~", true},
		{Debian, "backup.dpkg-old", true},
		{Cronie, "backup.sh", false},
		{Cronie, "0hourly", false},
		{Cronie, ".placeholder", true},
		{Cronie, "backup~", true},
		{Cronie, "backup.rpmsave", true},
		{Cronie, "backup.rpmnew", true},
	}
	for _, tc := range tests {
		t.Run(string(tc.flavour)+"/"+tc.name, func(t *testing.T) {
			if got := cronIgnores(tc.flavour, tc.name) != ""; got != tc.ignored {
				t.Errorf("ignored = %v, want %v", got, tc.ignored)
			}
		})
	}
}

// FuzzParseCronLine checks that any line parses without a panic, that a
// job line it accepts has a schedule cron reads and a command, and that
// reading the command for wrappers never fails either. The seed corpus is
// in testdata/fuzz/FuzzParseCronLine.
func FuzzParseCronLine(f *testing.F) {
	for _, s := range []string{
		"30 2 * * * root flock /tmp/backup.lock /usr/local/bin/backup.sh --full",
		"*/10 * * * * jobwatch run --job sync --lock /run/lock/sync.lock --timeout 5m -- /home/alice/bin/sync.sh",
		`0 1 * * * tar czf /a-$(date +\%F).tgz %stdin%more`,
		"@reboot /bin/agent",
		"CRON_TZ=Europe/Berlin",
		`  X = "quoted value"`,
		"0 9 * jan-mar mon-fri nice -n 5 ionice -c3 timeout -k 10 1h flock -nw 5 /run/lock/x -c 'a && b | c'",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, line string, system bool) {
		l, err := ParseCronLine(line, system)
		if err != nil || l.Kind != LineJob {
			return
		}
		if strings.TrimSpace(l.Command) == "" {
			t.Fatalf("accepted job line %q with an empty command", line)
		}
		if system && l.User == "" {
			t.Fatalf("accepted system line %q without a user", line)
		}
		if !l.Reboot {
			if _, err := cronSchedule(l.Schedule, time.UTC); err != nil {
				t.Fatalf("accepted schedule %q that does not parse: %v", l.Schedule, err)
			}
		}
		c := ParseCommand(l.Command)
		if c.Core != "" && c.Name == "" {
			t.Fatalf("command %q: core %q but no name", l.Command, c.Core)
		}
		if c.Timeout < 0 {
			t.Fatalf("command %q: negative timeout", l.Command)
		}
		_ = jobName(c.Name)
	})
}
