package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/sources"
)

// TestJournalFollowAcrossBoots: journalctl --follow shows only the boot it
// takes for the current one (the running kernel's boot ID for the system
// journal, which a sandbox with ProtectKernelTunables= shows as the host's
// rather than the container's; the newest boot in the files of a
// directory). The source follows by cursor whatever the boot: entries of a
// boot that begins while it follows (a container rebooted, a journal that
// is not this kernel's) are read as they come.
func TestJournalFollowAcrossBoots(t *testing.T) {
	needJournalTools(t)
	first := journaltest.NewHost("web1", jBoot0)
	first.BootID = "0123456789abcdef0123456789abcdef" // not this kernel's
	next := journaltest.NewHost("web1", jBase.Add(30*time.Second))
	next.BootID = "fedcba9876543210fedcba9876543210"
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, jSuccessRun(first, "stats.service", inv("b1"), 0, 10)); err != nil {
		t.Fatal(err)
	}
	sink := &jSink{}
	jRun(t, newJTestJournal(t, dir, nil), nil, sink)
	jSettled(t, sink, 2, 10*time.Second, "the first boot's run")
	if err := journaltest.Append(file, jSuccessRun(next, "stats.service", inv("b2"), 60, 20)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitUntil(t, 10*time.Second, "the next boot's run, through the follower", func() bool { return len(sink.events()) >= 4 })
	jSettled(t, sink, 4, 10*time.Second, "both boots' runs")
	jCompare(t, sink.events(), []string{
		"10:00:00 start stats host=web1 pid=10 run=" + inv("b1"),
		"10:00:03 end stats host=web1 pid=10 run=" + inv("b1") + " success took=3s",
		"10:01:00 start stats host=web1 pid=20 run=" + inv("b2"),
		"10:01:03 end stats host=web1 pid=20 run=" + inv("b2") + " success took=3s",
	})
}

// Reading the system journal, each match group names this machine, when
// journald keeps this machine's journal: the follower's --merge opens
// other machines' journals too (containers' under /var/log/journal,
// journal-remote's), whose units may share names. A container given the
// host's journal (no journal of its own machine ID) reads it whole.
func TestSystemJournalMatchesThisMachine(t *testing.T) {
	id := "4f1c2e0d9a8b7c6d5e4f3a2b1c0d9e8f"
	f := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(f, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ours, hosts := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(ours, id), filepath.Join(hosts, "0123456789abcdef0123456789abcdef")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	oldID, oldDirs := MachineIDFile, SystemJournalDirs
	MachineIDFile = f
	t.Cleanup(func() { MachineIDFile, SystemJournalDirs = oldID, oldDirs })
	sys := Config{Units: map[string]string{"a.service": "a"}, Cron: []CronMatch{{Match: "x", Job: "a"}}}
	for _, tc := range []struct {
		name string
		dirs []string
		cfg  Config
		want string
	}{
		{"system journal", []string{hosts, ours}, sys,
			"UNIT=a.service _MACHINE_ID=" + id + " + _SYSTEMD_UNIT=a.service _MACHINE_ID=" + id + " + SYSLOG_IDENTIFIER=CRON SYSLOG_IDENTIFIER=cron _MACHINE_ID=" + id},
		{"the host's journal in a container", []string{hosts}, sys,
			"UNIT=a.service + _SYSTEMD_UNIT=a.service + SYSLOG_IDENTIFIER=CRON SYSLOG_IDENTIFIER=cron"},
		{"a directory: the journals chosen", []string{ours}, Config{Directory: t.TempDir(), Units: map[string]string{"a.service": "a"}},
			"UNIT=a.service + _SYSTEMD_UNIT=a.service"},
	} {
		SystemJournalDirs = tc.dirs
		j, err := New("j", tc.cfg, sources.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(j.matches, " "); got != tc.want {
			t.Errorf("%s: matches %q, want %q", tc.name, got, tc.want)
		}
		r := j.newReader(nil, nil)
		if a := strings.Join(r.args(true), " "); !strings.Contains(a, "--follow --merge") {
			t.Errorf("%s: the follower's arguments %q lack --merge", tc.name, a)
		}
	}
}
