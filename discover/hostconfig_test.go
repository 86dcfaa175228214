package discover

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Host mode's config: the example host's six jobs join a config without
// jobs; a configured job of the same name stays as configured, and a
// configured journal source reading the system journal takes the units and
// cron matches instead of a second source reading it.
func TestHostConfig(t *testing.T) {
	h, err := Read("testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	out, err := HostConfig(h, []byte("discovery: {enabled: true, watch: true}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, out)
	if len(cfg.Jobs) != len(h.Jobs) || len(cfg.Sources) != 2 {
		t.Errorf("%d jobs and %d sources, want %d and 2 (journal, runs):\n%s", len(cfg.Jobs), len(cfg.Sources), len(h.Jobs), out)
	}
	again, err := HostConfig(h, []byte("discovery: {enabled: true, watch: true}\n"), "")
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("the same host and config give other bytes (%v):\n%s", err, again)
	}

	mine := `discovery: {enabled: true, watch: true}
jobs:
  - name: backup
    every: 1d
  - name: rotate
    every: 1d
sources:
  - name: system
    type: journal
    units:
      rotate.service: rotate
`
	out, err = HostConfig(h, []byte(mine), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg = parseConfig(t, out)
	if len(cfg.Jobs) != len(h.Jobs)+1 || cfg.Jobs[0].Name != "backup" || cfg.Jobs[0].Every.D().Hours() != 24 {
		t.Errorf("jobs %+v", cfg.Jobs)
	}
	var srcs []string
	for _, s := range cfg.Sources {
		srcs = append(srcs, s.Name+":"+s.Type)
	}
	if got := strings.Join(srcs, " "); got != "system:journal runs:runlog" {
		t.Errorf("sources = %s, want the configured journal source and the run log:\n%s", got, out)
	}
	for _, want := range []string{`"metrics-push.service": "metrics-push"`, `"rotate.service": "rotate"`, `"job": "db-dump-postgres"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the journal source lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"job": "backup"`) {
		t.Errorf("the configured backup job is matched in the journal as the discovered one:\n%s", out)
	}
}

// A directory that cannot be read for a while (here /etc/cron.d replaced by
// a file, which root cannot list either) keeps the jobs the read before
// found in it, in their places: the host's config is the same. A job gone
// from a file that can be read is gone; a read of another root keeps none.
func TestKeepUnreadable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(root, os.DirFS("testdata/example")); err != nil {
		t.Fatal(err)
	}
	prev, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := HostConfig(prev, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	cronD := filepath.Join(root, "etc/cron.d")
	if err := os.Rename(cronD, cronD+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cronD, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := jobNames(h.Jobs); slices.Contains(got, "backup") {
		t.Fatalf("read with /etc/cron.d unreadable found %v: the test reads nothing unreadable", got)
	}
	if n := h.KeepUnreadable(prev); n != 2 {
		t.Errorf("kept %d jobs, want 2 (backup, db-dump-postgres of /etc/cron.d)", n)
	}
	if got, want := jobNames(h.Jobs), jobNames(prev.Jobs); !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v in the same order", got, want)
	}
	if got, err := HostConfig(h, nil, ""); err != nil || !bytes.Equal(got, want) {
		t.Errorf("host config (%v) differs from the read before's:\n%s\nwant\n%s", err, got, want)
	}

	// The web crontab's report line removed too: it is gone.
	spool := filepath.Join(root, "var/spool/cron/crontabs/web")
	if err := os.WriteFile(spool, []byte("*/5 * * * * jobwatch run --job sitemap --lock /run/lock/sitemap.lock --timeout 4m -- /srv/web/bin/sitemap\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err = Read(root)
	if err != nil {
		t.Fatal(err)
	}
	h.KeepUnreadable(prev)
	if got := jobNames(h.Jobs); slices.Contains(got, "report") || !slices.Contains(got, "backup") {
		t.Errorf("jobs %v: want backup kept (unreadable), report gone (removed)", got)
	}

	other, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	other.Root = root + "/"
	if n := other.KeepUnreadable(prev); n != 0 {
		t.Errorf("a read of another root kept %d jobs of prev", n)
	}
}

// jobNames are the jobs' names, in their order.
func jobNames(jobs []Job) []string {
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	return names
}

// A directory discovery reads that disappears (renamed away, a mount gone,
// the whole root an empty mount point) hides its jobs rather than
// removing them: they are kept as the read before found them, the host's
// config is the same, the directory is noted unreadable, and the next read
// keeps them still. Once it is back, what it holds decides. A unit
// directory gone hides the timers it enabled whose units live elsewhere.
func TestKeepJobsOfGoneDirectories(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gone  []string // moved away, relative to the root
		noted []string // the directories noted gone
		kept  int
	}{
		{"cron.d renamed away", []string{"etc/cron.d"}, []string{"/etc/cron.d"}, 2},
		{"systemd/system renamed away", []string{"etc/systemd/system"}, []string{"/etc/systemd/system"}, 3},
		{"spool renamed away", []string{"var/spool/cron"}, []string{"/var/spool/cron/crontabs"}, 2},
		// The user crontabs, read, take the host's zone of the read
		// before, as the kept jobs do.
		{"etc renamed away", []string{"etc"}, []string{"/etc", "/etc/systemd/system"}, 5},
		{"empty root", []string{"etc", "var", "lib"}, []string{"/etc", "/lib/systemd/system", "/var/spool/cron/crontabs"}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if err := os.CopyFS(root, os.DirFS("testdata/example")); err != nil {
				t.Fatal(err)
			}
			// A timer as Debian's packages install them: the unit under
			// /lib, enabled by a link under /etc.
			writeTreeAt(t, root, map[string]string{
				"lib/systemd/system/rotate.timer":                     "[Timer]\nOnCalendar=daily\n",
				"lib/systemd/system/rotate.service":                   "[Service]\nType=oneshot\nExecStart=/usr/sbin/rotate\n",
				"etc/systemd/system/timers.target.wants/rotate.timer": "->/lib/systemd/system/rotate.timer",
			})
			prev, err := Read(root)
			if err != nil {
				t.Fatal(err)
			}
			want, err := HostConfig(prev, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			away := t.TempDir()
			for i, g := range tc.gone {
				if err := os.Rename(filepath.Join(root, g), filepath.Join(away, strconv.Itoa(i))); err != nil {
					t.Fatal(err)
				}
			}
			h := prev
			for read := 1; read <= 2; read++ {
				next, err := Read(root)
				if err != nil {
					t.Fatal(err)
				}
				if n := next.KeepUnreadable(h); n != tc.kept {
					t.Errorf("read %d kept %d jobs, want %d", read, n, tc.kept)
				}
				if got, want := jobNames(next.Jobs), jobNames(prev.Jobs); !slices.Equal(got, want) {
					t.Errorf("read %d: jobs %v, want %v in the same order", read, got, want)
				}
				if got, err := HostConfig(next, nil, ""); err != nil || !bytes.Equal(got, want) {
					t.Errorf("read %d: host config (%v) differs from the read before's:\n%s\nwant\n%s", read, err, got, want)
				}
				if noted := notedGone(next); !slices.Equal(noted, tc.noted) {
					t.Errorf("read %d: noted gone %v, want %v", read, noted, tc.noted)
				}
				h = next
			}

			// Back, with one job of each kind removed: those are gone.
			for i, g := range tc.gone {
				if err := os.Rename(filepath.Join(away, strconv.Itoa(i)), filepath.Join(root, g)); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"etc/cron.d/backup", "etc/systemd/system/timers.target.wants/rotate.timer", "var/spool/cron/crontabs/web"} {
				if err := os.Remove(filepath.Join(root, f)); err != nil {
					t.Fatal(err)
				}
			}
			back, err := Read(root)
			if err != nil {
				t.Fatal(err)
			}
			if n := back.KeepUnreadable(h); n != 0 {
				t.Errorf("the read after the directories came back kept %d jobs", n)
			}
			if got := jobNames(back.Jobs); slices.Contains(got, "backup") || slices.Contains(got, "rotate") || slices.Contains(got, "report") || len(got) != len(prev.Jobs)-4 {
				t.Errorf("jobs once back %v, want %v without backup, rotate and the web crontab's two", got, jobNames(prev.Jobs))
			}
		})
	}
}

// A directory that is gone and held no job raises nothing: a host without
// a spool, or /run/systemd/system on a tree copied without it.
func TestGoneDirectoryWithoutJobs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(root, os.DirFS("testdata/example")); err != nil {
		t.Fatal(err)
	}
	writeTreeAt(t, root, map[string]string{"run/systemd/system/.keep": ""})
	prev, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.KeepUnreadable(prev); n != 0 {
		t.Errorf("kept %d jobs for a directory that held none", n)
	}
	for _, f := range Check(h, Options{}) {
		if f.Kind == KindUnreadable {
			t.Errorf("finding %+v for a directory that held no job", f)
		}
	}
}

// A directory of the host's jobs whose mode is 000 hides its jobs, as one
// gone does: kept, the host's config the same, the directory noted
// unreadable (permission denied), for cron.d and for the unit directory
// whose links enable the timers. Read runs without the capabilities that
// let root read anything (readWithoutDAC).
func TestKeepJobsOfMode000Directories(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		kept int
	}{
		{"etc/cron.d", 2},
		{"etc/systemd/system", 2},
		{"var/spool/cron/crontabs", 2},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if err := os.CopyFS(root, os.DirFS("testdata/example")); err != nil {
				t.Fatal(err)
			}
			prev := readWithoutDAC(t, root)
			want, err := HostConfig(prev, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, tc.dir)
			if err := os.Chmod(dir, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			h := readWithoutDAC(t, root)
			if n := h.KeepUnreadable(prev); n != tc.kept {
				t.Errorf("kept %d jobs, want %d", n, tc.kept)
			}
			if got, err := HostConfig(h, nil, ""); err != nil || !bytes.Equal(got, want) {
				t.Errorf("host config (%v) differs from the read before's:\n%s\nwant\n%s", err, got, want)
			}
			denied := false
			for _, f := range h.Notes {
				denied = denied || f.Kind == KindUnreadable && f.File == "/"+tc.dir && strings.Contains(f.Message, "permission denied")
			}
			if !denied {
				t.Errorf("no unreadable finding for /%s: %+v", tc.dir, h.Notes)
			}
		})
	}
}

// readWithoutDAC reads root as discover runs without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH (a user's, or root's inside a confined unit): on a
// thread of its own whose effective capabilities lack them, which ends
// with the read (capabilities are a thread's own on Linux).
func readWithoutDAC(t *testing.T, root string) *Host {
	t.Helper()
	type result struct {
		h   *Host
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- result{err: err}
			return
		}
		h, err := Read(root)
		done <- result{h, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.h
}

// A directory that goes while a read is under way (after the read noted
// the directories there, before it read their files: renamed away or
// unmounted meanwhile) hides its jobs as one gone before the read does:
// they are kept, the host's config is the same, and the directory is noted
// gone. Before, the read took the directory for there and its jobs for
// removed, and the next read, with that one as its prev, had no job to
// keep for it and noted nothing (exporter's
// TestHostModeKeepsJobsOfGoneDirectories/empty_root, once beside stress-ng).
func TestKeepJobsOfDirectoryGoneDuringRead(t *testing.T) {
	root, prev, want := exampleHost(t)
	away := t.TempDir()
	if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(away, "etc")); err != nil {
		t.Fatal(err)
	}
	h, err := read(root, false, &readHooks{dirsNoted: func() {
		if err := os.Rename(filepath.Join(root, "var"), filepath.Join(away, "var")); err != nil {
			t.Fatal(err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := h.KeepUnreadable(prev); n != len(prev.Jobs) {
		t.Errorf("kept %d jobs, want all %d", n, len(prev.Jobs))
	}
	if got, err := HostConfig(h, nil, ""); err != nil || !bytes.Equal(got, want) {
		t.Errorf("host config (%v) differs from the read before's:\n%s\nwant\n%s", err, got, want)
	}
	if noted, want := notedGone(h), []string{"/etc", "/var/spool/cron/crontabs"}; !slices.Equal(noted, want) {
		t.Errorf("noted gone %v, want %v", noted, want)
	}
}

// Directories that go once a read has read their files: the read has
// every job, and the next read, with it as its prev, keeps them all and
// notes the directories gone. (A read that counted a directory gone by
// its end as never there left the next one nothing to keep for it.)
func TestKeepJobsOfDirectoryGoneAfterRead(t *testing.T) {
	root, prev, want := exampleHost(t)
	away := t.TempDir()
	h, err := read(root, false, &readHooks{filesRead: func() {
		for _, d := range []string{"etc", "var"} {
			if err := os.Rename(filepath.Join(root, d), filepath.Join(away, d)); err != nil {
				t.Fatal(err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.KeepUnreadable(prev)
	next, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if n := next.KeepUnreadable(h); n != len(prev.Jobs) {
		t.Errorf("the read after kept %d jobs, want all %d", n, len(prev.Jobs))
	}
	if got, err := HostConfig(next, nil, ""); err != nil || !bytes.Equal(got, want) {
		t.Errorf("host config (%v) differs from the first read's:\n%s\nwant\n%s", err, got, want)
	}
	if noted, want := notedGone(next), []string{"/etc", "/var/spool/cron/crontabs"}; !slices.Equal(noted, want) {
		t.Errorf("noted gone %v, want %v", noted, want)
	}
}

// A timer's grace leaves the service manager time to start its run: on a
// booted Debian beside stress-ng, a minutely timer with AccuracySec=1s
// logged "Starting" 1.009 s after its time, which a grace of AccuracySec
// alone counted as an unexpected run and a missed slot (TestBootDebian).
func TestTimerGraceCoversStartLatency(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	writeTreeAt(t, root, map[string]string{
		"etc/systemd/system/tick.timer":                     "[Timer]\nOnCalendar=minutely\nAccuracySec=1s\n",
		"etc/systemd/system/tick.service":                   "[Service]\nType=oneshot\nExecStart=/usr/local/bin/tick\n",
		"etc/systemd/system/timers.target.wants/tick.timer": "->/etc/systemd/system/tick.timer",
	})
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Jobs) != 1 {
		t.Fatalf("jobs %v, want tick", jobNames(h.Jobs))
	}
	const seen = 1009 * time.Millisecond
	if g := h.Jobs[0].Grace(); g < seen+time.Second {
		t.Errorf("grace %v, want room beyond the %v a start was seen late on a loaded host", g, seen)
	}
}

// exampleHost copies testdata/example to a root of its own and reads it:
// the root, the read and its host config.
func exampleHost(t *testing.T) (root string, h *Host, config []byte) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(root, os.DirFS("testdata/example")); err != nil {
		t.Fatal(err)
	}
	h, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if config, err = HostConfig(h, nil, ""); err != nil {
		t.Fatal(err)
	}
	return root, h, config
}

// notedGone are the files of h's findings of a directory gone.
func notedGone(h *Host) []string {
	var noted []string
	for _, f := range Check(h, Options{}) {
		if f.Kind == KindUnreadable && strings.Contains(f.Message, "is gone") {
			noted = append(noted, f.File)
		}
	}
	return noted
}
