package discover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// readBounded is Read(root) with a deadline: a read that blocks (an open
// of a named pipe with no writer) fails the test instead of hanging it.
// The pipes are opened for writing at the end, which releases a reader
// stuck in open.
func readBounded(t *testing.T, root string, fifos ...string) *Host {
	t.Helper()
	t.Cleanup(func() {
		for _, p := range fifos {
			if fd, err := syscall.Open(filepath.Join(root, p), syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd) // a reader was waiting: it reads EOF now
			}
		}
	})
	type result struct {
		h   *Host
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := Read(root)
		done <- result{h, err}
	}()
	r := testproc.Receive(t, done, 30*time.Second, "discover to read a tree with a named pipe in it")
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.h
}

// mkfifo makes a named pipe at host path p under root.
func mkfifo(t *testing.T, root, p string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(full, 0o644); err != nil {
		t.Fatal(err)
	}
}

// findingsFor lists the findings on file as "kind: message; fix".
func findingsFor(fs []Finding, file string) []string {
	var out []string
	for _, f := range fs {
		if f.File == file {
			out = append(out, f.Kind+": "+f.Message+"; "+f.Fix)
		}
	}
	return out
}

// TestNamedPipesRefused: a named pipe wherever discover reads a file is
// reported as unreadable, and read without blocking.
func TestNamedPipesRefused(t *testing.T) {
	timer := map[string]string{
		"/etc/systemd/system/x.timer":                     "[Timer]\nOnCalendar=daily\n",
		"/etc/systemd/system/x.service":                   "[Service]\nType=oneshot\nExecStart=/bin/x\nTimeoutStartSec=1h\n",
		"/etc/systemd/system/timers.target.wants/x.timer": "->../x.timer",
	}
	for _, tc := range []struct {
		name, fifo string
		files      map[string]string
	}{
		{"system crontab", "/etc/crontab", nil},
		{"cron.d entry", "/etc/cron.d/job", nil},
		{"user crontab", "/var/spool/cron/crontabs/alice", map[string]string{"/etc/debian_version": "12\n"}},
		{"tmpfiles.d entry", "/etc/tmpfiles.d/app.conf", nil},
		{"timer unit", "/lib/systemd/system/y.timer", map[string]string{"/etc/systemd/system/timers.target.wants/y.timer": "->/lib/systemd/system/y.timer"}},
		{"service unit", "/etc/systemd/system/x.service", timer},
		{"timer drop-in", "/etc/systemd/system/x.timer.d/override.conf", timer},
		{"service drop-in", "/run/systemd/system/x.service.d/override.conf", timer},
		{"host zone", "/etc/timezone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for p, c := range tc.files {
				if p != tc.fifo {
					files[p] = c
				}
			}
			root := writeTree(t, files)
			mkfifo(t, root, tc.fifo)
			h := readBounded(t, root, tc.fifo)
			got := findingsFor(Check(h, Options{Now: now}), tc.fifo)
			want := "unreadable: cannot read: not a regular file (named pipe); cron and systemd read regular files only: replace it with one, or remove it"
			if tc.fifo == "/etc/timezone" {
				want = "" // the zone comes from /etc/localtime then; nothing to report
			}
			if strings.Join(got, "\n") != want {
				t.Errorf("findings on %s:\n%s\nwant\n%s", tc.fifo, strings.Join(got, "\n"), want)
			}
		})
	}
}

// TestTooLarge: a file over the limit is reported as too large, with its
// size and the limit, and the lines before the limit are read.
func TestTooLarge(t *testing.T) {
	const size = 5 << 20
	pad := func(head, tail string) string {
		var b strings.Builder
		b.WriteString(head)
		for b.Len()+len(tail)+1024 < size {
			b.WriteString("#" + strings.Repeat("x", 1022) + "\n")
		}
		b.WriteString("#" + strings.Repeat("x", size-b.Len()-len(tail)-2) + "\n")
		b.WriteString(tail)
		return b.String()
	}
	for _, tc := range []struct {
		name, file, content string
		want                []string // the jobs read
	}{
		{"crontab", "/etc/cron.d/big",
			pad("0 1 * * * root timeout 1m flock -n /run/lock/a /bin/a\n", "0 2 * * * root timeout 1m flock -n /run/lock/b /bin/b\n"),
			[]string{"a"}},
		{"timer", "/etc/systemd/system/big.timer",
			pad("[Timer]\nOnCalendar=daily\n", "OnCalendar=hourly\n"),
			[]string{"big daily"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, map[string]string{
				tc.file: tc.content,
				"/etc/systemd/system/timers.target.wants/big.timer": "->../big.timer",
				"/etc/systemd/system/big.service":                   "[Service]\nExecStart=/bin/big\n",
			})
			if fi, err := os.Stat(filepath.Join(root, tc.file)); err != nil || fi.Size() != size {
				t.Fatalf("fixture: %v, %d bytes", err, fi.Size())
			}
			h := readBounded(t, root)
			var jobs []string
			for _, j := range h.Jobs {
				jobs = append(jobs, strings.TrimSpace(j.Name+" "+strings.Join(j.OnCalendar, ",")))
			}
			if fmt.Sprint(jobs) != fmt.Sprint(tc.want) {
				t.Errorf("jobs %q, want %q", jobs, tc.want)
			}
			got := strings.Join(findingsFor(Check(h, Options{Now: now}), tc.file), "\n")
			want := "unreadable: read in part: too large (5 MiB, limit 4 MiB): the lines after the first 4 MiB are left out; " +
				"check what wrote it: crontabs, unit files and tmpfiles.d rules are small"
			if !strings.Contains(got, want) || strings.Contains(got, "root") {
				t.Errorf("findings on %s:\n%s\nwant\n%s", tc.file, got, want)
			}
		})
	}
}

func TestTooLargeMessage(t *testing.T) {
	for _, tc := range []struct {
		size int64
		want string
	}{
		{maxFile + 1, "too large (4.1 MiB, limit 4 MiB)"},
		{5 << 20, "too large (5 MiB, limit 4 MiB)"},
		{1 << 30, "too large (1024 MiB, limit 4 MiB)"},
	} {
		var err error = &tooLargeError{size: tc.size}
		if got := fmt.Errorf("read: %w", err).Error(); got != "read: "+tc.want {
			t.Errorf("size %d: %q, want %q", tc.size, got, tc.want)
		}
		var big *tooLargeError
		if !errors.As(fmt.Errorf("x: %w", err), &big) {
			t.Errorf("size %d: not a *tooLargeError once wrapped", tc.size)
		}
	}
}

// TestUnitByteOrderMark: a unit file or drop-in that starts with a UTF-8
// byte order mark is read as systemd reads it.
func TestUnitByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // the job's OnCalendar and timeout
	}{
		{"timer", map[string]string{"/etc/systemd/system/x.timer": bom + "[Timer]\nOnCalendar=daily\n"}, "daily 1h0m0s"},
		{"service", map[string]string{"/etc/systemd/system/x.service": bom + "[Service]\nType=oneshot\nExecStart=/bin/x\nTimeoutStartSec=2h\n"}, "hourly 2h0m0s"},
		{"drop-in", map[string]string{"/etc/systemd/system/x.timer.d/a.conf": bom + "[Timer]\nOnCalendar=\nOnCalendar=weekly\n"}, "weekly 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{
				"/etc/systemd/system/x.timer":                     "[Timer]\nOnCalendar=hourly\n",
				"/etc/systemd/system/x.service":                   "[Service]\nType=oneshot\nExecStart=/bin/x\nTimeoutStartSec=1h\n",
				"/etc/systemd/system/timers.target.wants/x.timer": "->../x.timer",
			}
			for p, c := range tc.files {
				files[p] = c
			}
			h := readBounded(t, writeTree(t, files))
			if len(h.Jobs) != 1 {
				t.Fatalf("jobs %+v, notes %+v", h.Jobs, h.Notes)
			}
			if got := strings.Join(h.Jobs[0].OnCalendar, ",") + " " + h.Jobs[0].Timeout.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
