package wrapper

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// A run that declined to run, through the real wrapper: the end record
// says skipped (same run id as its start), with the reason, the command's
// own exit code, and the wrapper exits with --skip-exit-code.
func TestSkippedRuns(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 1<<20) // 1 MiB, past MaxMatchedLine
	const mib = "head -c 1048576 /dev/zero | tr '\\0' x"
	cases := []struct {
		name           string
		args           []string // after --log LOG --job j
		code           int
		status, reason string
		recCode        int
		stdout, stderr string // the command's, exactly as the wrapper passes it on
	}{
		{"exit 75 declined", []string{"--skipped-exit", "75", "--", "sh", "-c", "exit 75"}, 0, "skipped", "other", 75, "", ""},
		{"one of two codes, a reason, a skip code", []string{"--skipped-exit", "76", "--skipped-exit=75", "--skipped-reason", "locked",
			"--skip-exit-code", "3", "--", "sh", "-c", "exit 75"}, 3, "skipped", "locked", 75, "", ""},
		{"another code fails", []string{"--skipped-exit", "75", "--", "sh", "-c", "exit 1"}, 1, "failure", "", 1, "", ""},
		{"success is success", []string{"--skipped-exit", "75", "--", "true"}, 0, "success", "", 0, "", ""},
		{"a line on stderr, exit 0", []string{"--skipped-output", "^lock held", "--", "sh", "-c", "echo starting; echo 'lock held by 42' >&2"},
			0, "skipped", "other", 0, "starting\n", "lock held by 42\n"},
		{"a line on stdout, whatever the exit", []string{"--skipped-output", "^lock held", "--skipped-reason", "disabled", "--", "sh", "-c", "printf 'a\\r\\nlock held\\r\\nb'; exit 4"},
			0, "skipped", "disabled", 4, "a\r\nlock held\r\nb", ""},
		{"the last line without its newline", []string{"--skipped-output", "^lock held$", "--", "sh", "-c", "printf 'x\\nlock held'"},
			0, "skipped", "other", 0, "x\nlock held", ""},
		{"no line matches", []string{"--skipped-output", "^lock held", "--", "sh", "-c", "echo 'the lock held'; echo done >&2"},
			0, "success", "", 0, "the lock held\n", "done\n"},
		{"a 1 MiB line without a newline is passed through, not matched", []string{"--skipped-output", "^x", "--", "sh", "-c", mib},
			0, "success", "", 0, long, ""},
		{"a line after a 1 MiB one is matched", []string{"--skipped-output", "^lock held$", "--", "sh", "-c", mib + "; printf '\\nlock held\\n'"},
			0, "skipped", "other", 0, long + "\nlock held\n", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(dir, "runs"+strconv.Itoa(i)+".log")
			cmd := wrapCmd(t, append([]string{"--log", log, "--job", "j"}, tc.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				if _, ok := err.(*exec.ExitError); !ok {
					t.Fatal(err)
				}
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout %q (%d bytes), stderr %q; want %q (%d bytes), %q", trim(stdout.String()), stdout.Len(), stderr.String(),
					trim(tc.stdout), len(tc.stdout), tc.stderr)
			}
			recs := readRecords(t, log)
			if events(recs) != "start,end" {
				t.Fatalf("records %q, want start,end", events(recs))
			}
			end := recs[1]
			if end.RunID != recs[0].RunID || end.Status != tc.status || end.Reason != tc.reason || end.ExitCode == nil || *end.ExitCode != tc.recCode {
				t.Errorf("end %+v (exit_code %s), want run id %s, status %q, reason %q, exit_code %d",
					end, fmtInt(end.ExitCode), recs[0].RunID, tc.status, tc.reason, tc.recCode)
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:30] + "..." + s[len(s)-30:]
	}
	return s
}

// The command's output reaches the wrapper's stdout as it is written, a
// line without its newline too, while the command still runs: cron mail
// and the journal see it as before.
func TestSkippedOutputPassesThroughAtOnce(t *testing.T) {
	dir := t.TempDir()
	cmd := wrapCmd(t, "--log", filepath.Join(dir, "runs.log"), "--job", "j", "--skipped-output", "^lock held",
		"--", "sh", "-c", "printf 'partial'; read x; echo; echo 'lock held'")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len("partial"))
		_, err := io.ReadFull(stdout, b)
		if err != nil {
			got <- err.Error()
		}
		got <- string(b)
	}()
	// The job waits on its stdin: what it printed is read while it runs.
	if s := testproc.Receive(t, got, time.Minute, "the partial line"); s != "partial" {
		t.Fatalf("read %q, want partial", s)
	}
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || string(rest) != "\nlock held\n" {
		t.Fatalf("wrapper: %v, the rest of stdout %q", err, rest)
	}
	if recs := readRecords(t, filepath.Join(dir, "runs.log")); len(recs) != 2 || recs[1].Status != "skipped" {
		t.Errorf("records %+v, want a start and a skipped end", recs)
	}
}

// 100 MB of output go through --skipped-output byte for byte, the line at
// their end still matched, in memory well under their size.
func TestSkippedOutputLargeBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB of output")
	}
	job := []string{"sh", "-c", "seq 1 12400000; echo lock held"}
	want := sha256.New()
	direct := exec.Command(job[0], job[1:]...)
	direct.Stdout = want
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := wrapCmd(t, append([]string{"--log", filepath.Join(dir, "runs.log"), "--job", "j", "--skipped-output", "^lock held$", "--"}, job...)...)
	got := &countingHash{h: sha256.New()}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = got, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrapper: %v (%s)", err, stderr.String())
	}
	if got.n < 100e6 || !bytes.Equal(got.h.Sum(nil), want.Sum(nil)) {
		t.Errorf("%d bytes reached stdout, sha256 %x; want the command's own %x", got.n, got.h.Sum(nil), want.Sum(nil))
	}
	// ru_maxrss of the wrapper (and of its job, whose is smaller), in KiB,
	// against the same wrapper's passing on one line: the race detector,
	// when on, makes both larger.
	small := wrapCmd(t, "--log", filepath.Join(dir, "small.log"), "--job", "j", "--skipped-output", "^lock held$", "--", "echo", "lock held")
	if err := small.Run(); err != nil {
		t.Fatal(err)
	}
	base, rss := maxRSS(small), maxRSS(cmd)
	limit := int64(16 << 10)
	if raceEnabled {
		limit = 48 << 10 // sync.Pool drops regexp's machines at random: every line's is garbage
	}
	t.Logf("max RSS %d KiB, %d KiB for one line", rss, base)
	if rss-base > limit {
		t.Errorf("the wrapper's max RSS %d KiB, %d KiB for one line; want the 100 MB it passed on to take less than %d KiB more", rss, base, limit)
	}
	if recs := readRecords(t, filepath.Join(dir, "runs.log")); len(recs) != 2 || recs[1].Status != "skipped" {
		t.Errorf("records %+v, want a start and a skipped end", recs)
	}
}

func maxRSS(cmd *exec.Cmd) int64 { return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss }

type countingHash struct {
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// A line that matches, split across the writes of the command (or the
// pipe's reads), is one line; each stream has its own.
func TestLineMatcherSplits(t *testing.T) {
	var out bytes.Buffer
	r := &runner{o: Options{SkippedOutput: "^lock held$"}}
	if err := r.checkSkipped(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := r.output.writers(&out, &out)
	for _, w := range []struct {
		to io.Writer
		s  string
	}{{stdout, "lock "}, {stderr, "other\n"}, {stdout, "he"}, {stdout, "ld\nnext"}} {
		if _, err := w.to.Write([]byte(w.s)); err != nil {
			t.Fatal(err)
		}
	}
	if !r.output.seen() || out.String() != "lock other\nheld\nnext" {
		t.Errorf("matched %v, passed on %q; want matched, every byte in order", r.output.seen(), out.String())
	}
}
