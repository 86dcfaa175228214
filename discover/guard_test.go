package discover

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The lines Debian's packages ship in /etc/cron.d and /etc/crontab (the
// files themselves are in testdata/debian-stock).
const (
	phpLine     = `09,39 *     * * *     root   [ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then /usr/lib/php/sessionclean; fi`
	anacronLine = `30 7-23 * * *   root	[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then /usr/sbin/invoke-rc.d anacron start >/dev/null; fi`
	certbotLine = `0 */12 * * * root test -x /usr/bin/certbot -a \! -d /run/systemd/system && perl -e 'sleep int(rand(43200))' && certbot -q renew --no-random-sleep-on-renew`
	ntpsecLine  = `25 6     * * * root if [ ! -d /run/systemd/system ] && [ -x /usr/libexec/ntpsec/rotate-stats ] ; then /usr/libexec/ntpsec/rotate-stats ; fi`
	e2scrubLine = `10 3 * * * root test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r`
	dailyLine   = "25 6\t* * *\troot\ttest -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }"
)

// TestGuards: a cron line guarded so that it does nothing on this host is
// left out with the reason; one that runs is named after its command.
func TestGuards(t *testing.T) {
	programs := map[string]string{
		"/etc/init.d/anacron": "", "/usr/sbin/anacron": "", "/usr/bin/certbot": "",
		"/usr/lib/php/sessionclean": "", "/usr/libexec/ntpsec/rotate-stats": "",
	}
	const (
		systemd = "it runs only where systemd is not the init system (a timer does the work here)"
		anacron = "it runs only when /usr/sbin/anacron is missing, and it is here (e.g. anacron runs cron.daily)"
	)
	for _, tc := range []struct {
		name    string
		line    string
		systemd bool
		want    string // "no_op: why", or the job's name
	}{
		{"php on systemd", phpLine, true, "no_op: " + systemd},
		{"php on sysvinit", phpLine, false, "sessionclean"},
		{"anacron on systemd", anacronLine, true, "no_op: " + systemd},
		{"anacron on sysvinit", anacronLine, false, "invoke-rc"},
		{"certbot on systemd", certbotLine, true, "no_op: " + systemd},
		{"certbot on sysvinit", certbotLine, false, "certbot"},
		{"ntpsec on systemd", ntpsecLine, true, "no_op: " + systemd},
		{"ntpsec on sysvinit", ntpsecLine, false, "rotate-stats"},
		{"e2scrub on systemd", e2scrubLine, true, "no_op: " + systemd},
		{"e2scrub on sysvinit", e2scrubLine, false, "e2scrub_all"},
		{"cron.daily with anacron", dailyLine, false, "no_op: " + anacron},
		{"program missing from the tree, then systemd", `0 1 * * * root [ -x /opt/x ] && if [ ! -d /run/systemd/system ]; then /opt/x; fi`, true, "no_op: " + systemd},
		{"trailing slash", `0 1 * * * root [ -d /run/systemd/system/ ] || /bin/x`, true, "no_op: " + systemd},
		{"systemd only, on sysvinit", `0 1 * * * root test -d /run/systemd/system && /bin/x`, false, "no_op: it runs only where systemd is the init system, which it is not here"},
		{"else branch runs", `0 1 * * * root if [ ! -d /run/systemd/system ]; then /bin/a; else /bin/b; fi`, true, "b"},
		{"elif branch runs", `0 1 * * * root if [ ! -d /run/systemd/system ]; then /bin/a; elif [ -x /bin/c ]; then /bin/c; fi`, true, "c"},
		{"a command after the guarded one", `0 1 * * * root test -e /run/systemd/system || /bin/a; /bin/b`, true, "b"},
		{"|| then && runs the last", `0 1 * * * root test -e /run/systemd/system || /bin/a && /bin/b`, true, "b"},
		{"-o with an unknown side", `0 1 * * * root test -x /opt/x -o \! -d /run/systemd/system && /opt/x`, true, "x"},
		{"a variable", `0 1 * * * root [ -d "$DIR" ] && if [ -n "$X" ]; then /bin/x; fi`, true, "x"},
		{"a pipeline after the guard is skipped too", `0 1 * * * root test -e /run/systemd/system || /bin/a | /bin/b`, true, "no_op: " + systemd},
		{"a loop", `0 1 * * * root for i in 1 2; do [ -d /run/systemd/system ] || /bin/x; done`, true, "x"},
		{"unterminated if", `0 1 * * * root if [ ! -d /run/systemd/system ]; then /bin/x`, true, "x"},
		{"keywords never name a job", `0 1 * * * root /bin/a && if [ -x /opt/y ]; then /opt/y --now; fi`, true, "y"},
		{"a test alone names the job", `0 1 * * * root [ -x /opt/nothing ]`, true, "_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"/etc/cron.d/job": tc.line + "\n", "/etc/debian_version": "12\n"}
			for p, c := range programs {
				files[p] = c
			}
			if tc.systemd {
				files["/lib/systemd/systemd"] = ""
			}
			h := readBounded(t, writeTree(t, files))
			got := jobNames(h.Jobs)
			for _, f := range h.Notes {
				if f.Kind == KindNoOp {
					got = append(got, "no_op: "+strings.TrimPrefix(f.Message, "left out: "))
				}
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("%s\ngot  %q\nwant %q", tc.line, got, tc.want)
			}
		})
	}
}

// TestStockDebian: a Debian host with anacron, certbot, e2fsprogs, ntpsec
// and php installed, as the packages ship them: their cron lines do nothing
// on systemd and are left out, their timers are watched, and discover
// exits 0 (no warning).
func TestStockDebian(t *testing.T) {
	h := readBounded(t, filepath.Join("testdata", "debian-stock"))
	findings := Check(h, Options{Now: now})
	var jobs, noOps, warnings []string
	for _, j := range h.Jobs {
		jobs = append(jobs, j.Name)
	}
	for _, f := range findings {
		switch {
		case f.Severity == Warning:
			warnings = append(warnings, fmt.Sprintf("%s:%d %s %s", f.File, f.Line, f.Kind, f.Message))
		case f.Kind == KindNoOp:
			noOps = append(noOps, fmt.Sprintf("%s:%d", f.File, f.Line))
		}
	}
	if len(warnings) > 0 {
		t.Errorf("warnings (discover would exit 1):\n%s", strings.Join(warnings, "\n"))
	}
	wantJobs := "cron.hourly anacron certbot e2scrub_all ntpsec-rotate-stats phpsessionclean"
	if strings.Join(jobs, " ") != wantJobs {
		t.Errorf("jobs %q, want %q", jobs, wantJobs)
	}
	wantNoOps := "/etc/cron.d/anacron:6 /etc/cron.d/certbot:17 /etc/cron.d/e2scrub_all:1 /etc/cron.d/e2scrub_all:2 " +
		"/etc/cron.d/ntpsec:1 /etc/cron.d/php:14 /etc/crontab:19 /etc/crontab:20 /etc/crontab:21"
	if strings.Join(noOps, " ") != wantNoOps {
		t.Errorf("lines left out %q, want %q", noOps, wantNoOps)
	}
	out, err := Generate(h, GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := parseConfig(t, out); len(cfg.Jobs) != len(h.Jobs) {
		t.Errorf("%d jobs in the config, %d found", len(cfg.Jobs), len(h.Jobs))
	}
}
