// Package journaltest builds real systemd journal files for tests: entries
// are written in the journal export format, in the shape systemd 252 logs
// unit lifecycle and cron messages, and turned into journal files by
// systemd-journal-remote (Debian package systemd-journal-remote).
package journaltest

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// systemd's message catalog IDs (src/systemd/sd-messages.h), as systemd logs them.
const (
	MsgUnitStarting      = "7d4958e842da4a758f6c1cdc7b36dcc5" // SD_MESSAGE_UNIT_STARTING
	MsgUnitStarted       = "39f53479d3a045ac8e11786248231fbf" // SD_MESSAGE_UNIT_STARTED
	MsgUnitFailed        = "be02cf6855d2428ba40df7e9d022f03d" // SD_MESSAGE_UNIT_FAILED
	MsgUnitSuccess       = "7ad2d189f7e94e70a38c781354912448" // SD_MESSAGE_UNIT_SUCCESS
	MsgUnitFailureResult = "d9b373ed55a64feb8242e02dbe79a49c" // SD_MESSAGE_UNIT_FAILURE_RESULT
	MsgUnitProcessExit   = "98e322203f7a4ed290d09fe03c09fe15" // SD_MESSAGE_UNIT_PROCESS_EXIT
	MsgUnitResources     = "ae8f7b866b0347b9af31fe1c80b127c0" // SD_MESSAGE_UNIT_RESOURCES
)

// Field is one journal field. Binary values (not valid as a text line) are
// written in the export format's binary encoding.
type Field struct{ Name, Value string }

// Entry is one journal entry: its timestamps and fields in order.
type Entry struct {
	Realtime  time.Time
	Monotonic time.Duration
	Fields    []Field
}

// Add appends a field.
func (e *Entry) Add(name, value string) { e.Fields = append(e.Fields, Field{name, value}) }

// Set replaces the first value of a field, or adds it.
func (e *Entry) Set(name, value string) {
	for i := range e.Fields {
		if e.Fields[i].Name == name {
			e.Fields[i].Value = value
			return
		}
	}
	e.Add(name, value)
}

// Get returns the first value of a field.
func (e *Entry) Get(name string) string {
	for _, f := range e.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Host writes entries as one machine and boot would log them.
type Host struct {
	Hostname  string
	BootID    string // 32 hex digits
	MachineID string
	// BootTime is the realtime of monotonic zero.
	BootTime time.Time
	seq      int
}

// NewHost returns a host whose boot ID is the running kernel's, so that
// journalctl --follow (which shows the current boot) sees its entries.
func NewHost(hostname string, bootTime time.Time) *Host {
	boot := CurrentBootID()
	return &Host{Hostname: hostname, BootID: boot, MachineID: id128("machine:" + hostname), BootTime: bootTime}
}

// CurrentBootID is the running kernel's boot ID, as journald stores it.
func CurrentBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return id128("boot")
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
}

// InvocationID is a deterministic invocation ID for a name.
func InvocationID(name string) string { return id128("invocation:" + name) }

func id128(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func (h *Host) entry(t time.Time) Entry {
	h.seq++
	mono := t.Sub(h.BootTime)
	if mono < 0 {
		mono = 0
	}
	e := Entry{Realtime: t, Monotonic: mono}
	return e
}

// systemdEntry is an entry logged by the service manager (PID 1) about unit.
func (h *Host) systemdEntry(t time.Time, prio int, msgID, msg, unit, invocation string, extra ...Field) Entry {
	e := h.entry(t)
	e.Add("_BOOT_ID", h.BootID)
	e.Add("_MACHINE_ID", h.MachineID)
	e.Add("_HOSTNAME", h.Hostname)
	e.Add("PRIORITY", strconv.Itoa(prio))
	e.Add("SYSLOG_FACILITY", "3")
	e.Add("SYSLOG_IDENTIFIER", "systemd")
	e.Add("_UID", "0")
	e.Add("_GID", "0")
	e.Add("_TRANSPORT", "journal")
	e.Add("_CAP_EFFECTIVE", "1ffffffffff")
	e.Add("CODE_FILE", "src/core/unit.c")
	e.Add("CODE_LINE", "5000")
	e.Add("CODE_FUNC", "unit_log")
	e.Add("_PID", "1")
	e.Add("_COMM", "systemd")
	e.Add("_EXE", "/usr/lib/systemd/systemd")
	e.Add("_CMDLINE", "/sbin/init")
	e.Add("_SYSTEMD_CGROUP", "/init.scope")
	e.Add("_SYSTEMD_UNIT", "init.scope")
	e.Add("_SYSTEMD_SLICE", "-.slice")
	e.Add("MESSAGE", msg)
	e.Fields = append(e.Fields, extra...)
	if msgID != "" {
		e.Add("MESSAGE_ID", msgID)
	}
	e.Add("UNIT", unit)
	if invocation != "" {
		e.Add("INVOCATION_ID", invocation)
	}
	e.Add("_SOURCE_REALTIME_TIMESTAMP", strconv.FormatInt(t.UnixMicro(), 10))
	return e
}

// Starting: "Starting <unit> - <desc>...", the start job begins.
func (h *Host) Starting(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 6, MsgUnitStarting, "Starting "+unit+" - "+desc(unit)+"...", unit, invocation,
		Field{"JOB_ID", strconv.Itoa(1000 + h.seq)}, Field{"JOB_TYPE", "start"})
}

// Deactivated: "<unit>: Deactivated successfully."
func (h *Host) Deactivated(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 6, MsgUnitSuccess, unit+": Deactivated successfully.", unit, invocation)
}

// Finished: the start job of a oneshot unit is done ("Finished ...").
func (h *Host) Finished(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 6, MsgUnitStarted, "Finished "+unit+" - "+desc(unit)+".", unit, invocation,
		Field{"JOB_ID", strconv.Itoa(1000 + h.seq)}, Field{"JOB_TYPE", "start"}, Field{"JOB_RESULT", "done"})
}

// ProcessExit: "<unit>: Main process exited, code=<code>, status=<status>/<name>".
func (h *Host) ProcessExit(t time.Time, unit, invocation, code string, status int, statusName string) Entry {
	return h.systemdEntry(t, 5, MsgUnitProcessExit,
		fmt.Sprintf("%s: Main process exited, code=%s, status=%d/%s", unit, code, status, statusName), unit, invocation,
		Field{"EXIT_CODE", code}, Field{"EXIT_STATUS", strconv.Itoa(status)}, Field{"COMMAND", "/usr/local/bin/" + strings.TrimSuffix(unit, ".service")})
}

// FailureResult: "<unit>: Failed with result '<result>'."
func (h *Host) FailureResult(t time.Time, unit, invocation, result string) Entry {
	return h.systemdEntry(t, 4, MsgUnitFailureResult, fmt.Sprintf("%s: Failed with result '%s'.", unit, result), unit, invocation,
		Field{"UNIT_RESULT", result})
}

// FailedJob: "Failed to start <unit> - <desc>."
func (h *Host) FailedJob(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 3, MsgUnitFailed, "Failed to start "+unit+" - "+desc(unit)+".", unit, invocation,
		Field{"JOB_ID", strconv.Itoa(1000 + h.seq)}, Field{"JOB_TYPE", "start"}, Field{"JOB_RESULT", "failed"})
}

// TimedOut: "<unit>: start operation timed out. Terminating." (no MESSAGE_ID).
func (h *Host) TimedOut(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 4, "", unit+": start operation timed out. Terminating.", unit, invocation)
}

// Consumed: "<unit>: Consumed 1.234s CPU time."
func (h *Host) Consumed(t time.Time, unit, invocation string) Entry {
	return h.systemdEntry(t, 6, MsgUnitResources, unit+": Consumed 12ms CPU time.", unit, invocation,
		Field{"CPU_USAGE_NSEC", "12000000"})
}

// Output is a line the unit's own process wrote to stdout.
func (h *Host) Output(t time.Time, unit, invocation string, pid int, msg string) Entry {
	e := h.entry(t)
	comm := strings.TrimSuffix(unit, ".service")
	e.Add("_BOOT_ID", h.BootID)
	e.Add("_MACHINE_ID", h.MachineID)
	e.Add("_HOSTNAME", h.Hostname)
	e.Add("PRIORITY", "6")
	e.Add("SYSLOG_FACILITY", "3")
	e.Add("_UID", "0")
	e.Add("_GID", "0")
	e.Add("_CAP_EFFECTIVE", "1ffffffffff")
	e.Add("_SELINUX_CONTEXT", "unconfined\n")
	e.Add("_TRANSPORT", "stdout")
	e.Add("_STREAM_ID", id128(fmt.Sprint("stream", pid)))
	e.Add("SYSLOG_IDENTIFIER", comm)
	e.Add("_PID", strconv.Itoa(pid))
	e.Add("_COMM", comm)
	e.Add("_EXE", "/usr/bin/bash")
	e.Add("_CMDLINE", "/bin/bash /usr/local/bin/"+comm)
	e.Add("_SYSTEMD_CGROUP", "/system.slice/"+unit)
	e.Add("_SYSTEMD_UNIT", unit)
	e.Add("_SYSTEMD_SLICE", "system.slice")
	e.Add("_SYSTEMD_INVOCATION_ID", invocation)
	e.Add("MESSAGE", msg)
	return e
}

// Logger is a line that a process of the unit sent through syslog (logger(1)).
func (h *Host) Logger(t time.Time, unit, invocation string, pid int, msg string) Entry {
	e := h.Output(t, unit, invocation, pid, msg)
	e.Set("_TRANSPORT", "syslog")
	e.Set("_COMM", "logger")
	e.Set("SYSLOG_IDENTIFIER", "logger")
	for i := range e.Fields {
		if e.Fields[i].Name == "_STREAM_ID" {
			e.Fields = append(e.Fields[:i], e.Fields[i+1:]...)
			break
		}
	}
	return e
}

// Cron is a line of the cron daemon's child with pid: "(user) CMD (command)",
// "(user) END (command)", or "(CRON) error (grandchild #N failed with exit status S)".
func (h *Host) Cron(t time.Time, pid int, msg string) Entry {
	e := h.entry(t)
	e.Add("_BOOT_ID", h.BootID)
	e.Add("_MACHINE_ID", h.MachineID)
	e.Add("_HOSTNAME", h.Hostname)
	e.Add("PRIORITY", "6")
	e.Add("SYSLOG_FACILITY", "9")
	e.Add("SYSLOG_IDENTIFIER", "CRON")
	e.Add("SYSLOG_PID", strconv.Itoa(pid))
	e.Add("SYSLOG_TIMESTAMP", t.UTC().Format(time.Stamp)+" ")
	e.Add("MESSAGE", msg)
	e.Add("_UID", "0")
	e.Add("_GID", "0")
	e.Add("_TRANSPORT", "syslog")
	e.Add("_PID", strconv.Itoa(pid))
	e.Add("_COMM", "cron")
	e.Add("_EXE", "/usr/sbin/cron")
	e.Add("_CMDLINE", "/usr/sbin/cron -f -L 15")
	e.Add("_SYSTEMD_CGROUP", "/system.slice/cron.service")
	e.Add("_SYSTEMD_UNIT", "cron.service")
	e.Add("_SYSTEMD_SLICE", "system.slice")
	e.Add("_SYSTEMD_INVOCATION_ID", id128("cron.service"))
	e.Add("_SOURCE_REALTIME_TIMESTAMP", strconv.FormatInt(t.UnixMicro(), 10))
	return e
}

// Other is an unrelated entry (another daemon's log line).
func (h *Host) Other(t time.Time, ident string, pid int, msg string) Entry {
	e := h.entry(t)
	e.Add("_BOOT_ID", h.BootID)
	e.Add("_MACHINE_ID", h.MachineID)
	e.Add("_HOSTNAME", h.Hostname)
	e.Add("PRIORITY", "6")
	e.Add("SYSLOG_IDENTIFIER", ident)
	e.Add("_TRANSPORT", "stdout")
	e.Add("_PID", strconv.Itoa(pid))
	e.Add("_COMM", ident)
	e.Add("_SYSTEMD_UNIT", ident+".service")
	e.Add("_SYSTEMD_INVOCATION_ID", id128(ident))
	e.Add("MESSAGE", msg)
	return e
}

func desc(unit string) string {
	return "Job " + strings.TrimSuffix(unit, ".service")
}

// WriteExport writes entries in the journal export format
// (https://systemd.io/JOURNAL_EXPORT_FORMATS/): each entry is its fields, one
// "NAME=value" line each (or NAME, newline, little-endian 64-bit length, data,
// newline for values with control characters), then an empty line.
func WriteExport(w io.Writer, entries []Entry) error {
	var buf bytes.Buffer
	for i := range entries {
		e := &entries[i]
		// journal-remote ignores __CURSOR but systemd writes it first; keep the shape.
		fmt.Fprintf(&buf, "__CURSOR=s=0;i=%x;b=%s;m=%x;t=%x;x=0\n", i+1, e.Get("_BOOT_ID"), e.Monotonic.Microseconds(), e.Realtime.UnixMicro())
		fmt.Fprintf(&buf, "__REALTIME_TIMESTAMP=%d\n", e.Realtime.UnixMicro())
		fmt.Fprintf(&buf, "__MONOTONIC_TIMESTAMP=%d\n", e.Monotonic.Microseconds())
		for _, f := range e.Fields {
			if isText(f.Value) {
				buf.WriteString(f.Name)
				buf.WriteByte('=')
				buf.WriteString(f.Value)
				buf.WriteByte('\n')
				continue
			}
			buf.WriteString(f.Name)
			buf.WriteByte('\n')
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(f.Value)))
			buf.Write(n[:])
			buf.WriteString(f.Value)
			buf.WriteByte('\n')
		}
		buf.WriteByte('\n')
		if buf.Len() > 1<<20 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func isText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// RemoteBinary finds systemd-journal-remote, or returns an error naming the
// Debian package that ships it.
func RemoteBinary() (string, error) {
	for _, p := range []string{"/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("systemd-journal-remote not found: install the Debian package systemd-journal-remote")
}

// Append writes entries into the journal file at path (created if missing;
// it must end in .journal) by piping their export format into
// systemd-journal-remote.
func Append(path string, entries []Entry) error {
	return AppendStream(path, len(entries), func(i int) Entry { return entries[i] })
}

// AppendStream is Append for n entries made one at a time by gen, for
// journals too large to hold in memory.
func AppendStream(path string, n int, gen func(i int) Entry) error {
	bin, err := RemoteBinary()
	if err != nil {
		return err
	}
	if !strings.HasSuffix(path, ".journal") {
		return fmt.Errorf("journal file %s must end in .journal", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--output="+path, "--split-mode=none", "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting systemd-journal-remote: %w", err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	var werr error
	for i := 0; i < n && werr == nil; i++ {
		werr = WriteExport(w, []Entry{gen(i)})
	}
	if werr == nil {
		werr = w.Flush()
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("systemd-journal-remote -o %s: %w: %s", path, err, out.Bytes())
	}
	if werr != nil {
		return fmt.Errorf("writing to systemd-journal-remote: %w", werr)
	}
	return nil
}
