package discover

import (
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Command
	}{
		{name: "plain", line: "/usr/local/bin/backup.sh --full",
			want: Command{Core: "/usr/local/bin/backup.sh --full", Name: "backup"}},
		{name: "blocking flock", line: "flock /tmp/b.lock /usr/local/bin/backup.sh --full",
			want: Command{Core: "/usr/local/bin/backup.sh --full", Name: "backup", Lock: "/tmp/b.lock", LockBlocking: true}},
		{name: "flock -n, timeout, redirections", line: "flock -n /run/lock/d.lock timeout 2h /usr/local/bin/db-dump --all >/var/log/d.log 2>&1",
			want: Command{Core: "/usr/local/bin/db-dump --all", Name: "db-dump", Lock: "/run/lock/d.lock", Timeout: 2 * time.Hour}},
		{name: "flock -w", line: "/usr/bin/flock -w 60 /run/lock/x /bin/job",
			want: Command{Core: "/bin/job", Name: "job", Lock: "/run/lock/x"}},
		{name: "flock clustered -xn", line: "flock -xn /run/lock/x /bin/job",
			want: Command{Core: "/bin/job", Name: "job", Lock: "/run/lock/x"}},
		{name: "flock --nonblock -c", line: `flock --nonblock /run/lock/x -c "nice /bin/job -v > /dev/null"`,
			want: Command{Core: "/bin/job -v", Name: "job", Lock: "/run/lock/x"}},
		{name: "timeout with options", line: "timeout -k 10s --signal=TERM 90 /bin/job",
			want: Command{Core: "/bin/job", Name: "job", Timeout: 90 * time.Second}},
		{name: "nice and ionice", line: "nice -n 10 ionice -c3 /usr/local/bin/rotate-logs --compress >/dev/null 2>&1",
			want: Command{Core: "/usr/local/bin/rotate-logs --compress", Name: "rotate-logs"}},
		{name: "nice -N", line: "nice -19 /bin/job", want: Command{Core: "/bin/job", Name: "job"}},
		{name: "jobwatch run", line: "jobwatch run --job sync --lock=/run/lock/s.lock --timeout 5m --log /var/log/jw.log -- /home/a/sync.sh",
			want: Command{Core: "/home/a/sync.sh", Name: "sync", Lock: "/run/lock/s.lock", Timeout: 5 * time.Minute,
				Run: true, RunJob: "sync", RunLog: "/var/log/jw.log"}},
		{name: "run-parts", line: "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }",
			want: Command{Core: "test -x /usr/sbin/anacron ; cd / ; run-parts --report /etc/cron.daily", Name: "cron.daily", RunParts: "/etc/cron.daily"}},
		{name: "assignment and substitution", line: `LANG=C /opt/bin/report --day "$(date +%F)" 'a b'`,
			want: Command{Core: "/opt/bin/report --day $(date +%F) a b", Name: "report"}},
		{name: "comment", line: "/bin/job # nightly", want: Command{Core: "/bin/job", Name: "job"}},
		{name: "jobwatch run flags discover does not read, with their values",
			line: "jobwatch run --skipped-exit 75 --lock-redis redis://db1:6379/0 --job sync --skipped-output '^lock held' --timeout 1d -- /home/a/sync.sh",
			want: Command{Core: "/home/a/sync.sh", Name: "sync", Timeout: 24 * time.Hour, Run: true, RunJob: "sync"}},
		{name: "jobwatch-run, the wrapper alone", line: "/usr/bin/jobwatch-run --job sync --lock /run/lock/s.lock --timeout 5m -- /home/a/sync.sh",
			want: Command{Core: "/home/a/sync.sh", Name: "sync", Lock: "/run/lock/s.lock", Timeout: 5 * time.Minute, Run: true, RunJob: "sync"}},
		{name: "smallest timeout wins", line: "timeout 1h jobwatch run --job x --timeout 30m -- /bin/job",
			want: Command{Core: "/bin/job", Name: "job", Timeout: 30 * time.Minute, Run: true, RunJob: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCommand(tc.line); got != tc.want {
				t.Errorf("ParseCommand(%q)\n got  %+v\n want %+v", tc.line, got, tc.want)
			}
		})
	}
}

func TestJobName(t *testing.T) {
	for in, want := range map[string]string{
		"backup":      "backup",
		"backup@home": "backup_home",
		"7zip":        "_7zip",
		"":            "job",
		"a b/c":       "a_b_c",
		"cron.daily":  "cron.daily",
	} {
		if got := jobName(in); got != want {
			t.Errorf("jobName(%q) = %q, want %q", in, got, want)
		}
	}
}
