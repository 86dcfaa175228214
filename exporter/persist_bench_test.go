package exporter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// benchWindow is how long each persistence benchmark streams records;
// JOBWATCH_BENCH_SECONDS overrides it.
func benchWindow() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("JOBWATCH_BENCH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 20 * time.Second
}

// benchRate is how many records a second the persistence benchmark's
// writer appends (default 200); JOBWATCH_BENCH_RATE overrides it.
func benchRate() int {
	if n, err := strconv.Atoi(os.Getenv("JOBWATCH_BENCH_RATE")); err == nil && n > 0 {
		return n
	}
	return 200
}

// benchWrites is how many writes a second the writer spreads them over
// (default 20; JOBWATCH_BENCH_WRITES): more writes, more commits.
func benchWrites() int {
	if n, err := strconv.Atoi(os.Getenv("JOBWATCH_BENCH_WRITES")); err == nil && n > 0 {
		return n
	}
	return 20
}

// benchHistory is how many finished runs every job has before the window
// (default 1; JOBWATCH_BENCH_HISTORY): a job's saved state holds its last
// model.MaxRecentRuns runs and model.MaxDurationHistory durations, so a
// jobwatch that has run for a while saves larger jobs.
func benchHistory() int {
	if n, err := strconv.Atoi(os.Getenv("JOBWATCH_BENCH_HISTORY")); err == nil && n > 0 {
		return n
	}
	return 1
}

// benchAge is how long before it is written the writer dates each record
// (JOBWATCH_BENCH_AGE, a duration; default 0: stamped when written, as
// applications write them). Records older than the run log's late window
// are decided as they are read; live ones are held for it, their facts
// shown at once and their verdicts saved later.
func benchAge(b *testing.B) time.Duration {
	v := os.Getenv("JOBWATCH_BENCH_AGE")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("JOBWATCH_BENCH_AGE: %v", err)
	}
	return d
}

// stampLayout is the fixed-width time of the writer's records, and
// stampSlot what stands for it in the records formatted before the writer
// starts: it writes the time of each write there, less its age.
const (
	stampLayout = "2006-01-02T15:04:05.000000Z"
	stampSlot   = "@@@@-@@-@@T@@:@@:@@.@@@@@@Z"
)

// streamBench is a running jobwatch watching n jobs in one run log, every
// job with a finished run already, and a writer that appends records at a
// steady rate.
type streamBench struct {
	e      *Exporter
	log    *os.File
	cancel context.CancelFunc
	done   chan error
	n      int
	next   int // the job of the next record pair
	pid    int
	when   time.Time
}

func startStreamBench(b *testing.B, n int) *streamBench {
	b.Helper()
	dir := b.TempDir()
	cfg := hourlyJobsConfig(n) + "sources:\n  - name: runs\n    type: runlog\n    path: runs.log\n    format: json\n"
	if err := os.WriteFile(filepath.Join(dir, "jobwatch.yml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "runs.log"))
	if err != nil {
		b.Fatal(err)
	}
	s := &streamBench{log: log, n: n, when: time.Now().Add(-time.Hour)}
	history := benchHistory()
	for range history {
		s.write(b, 2*n) // a finished run of every job
	}
	s.e, err = New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- s.e.Run(ctx) }()
	// The saves of the catch-up are not part of what is measured: they are
	// over once the records and the source's health are saved.
	s.waitRecords(b, uint64(2*n*history))
	testproc.WaitUntil(b, 2*time.Minute, "the catch-up saved", func() bool {
		srcs := s.e.Saved().Sources()
		return len(srcs) == 1 && srcs[0].Up && srcs[0].Records == uint64(2*n*history)
	})
	return s
}

// write appends records: start and end pairs, each pair on the next job.
func (s *streamBench) write(b *testing.B, records int) {
	if _, err := s.log.Write(s.format(records, false)); err != nil {
		b.Fatal(err)
	}
}

// format is the next records of write, start and end pairs; stamped
// later by the writer (stampSlot) if stampLater, else dated from s.when.
func (s *streamBench) format(records int, stampLater bool) []byte {
	var w bytes.Buffer
	for range records / 2 {
		job := fmt.Sprintf("job_%05d", s.next%s.n)
		s.next++
		s.pid++
		s.when = s.when.Add(time.Millisecond)
		t := s.when.UTC().Format(time.RFC3339Nano)
		if stampLater {
			t = stampSlot
		}
		fmt.Fprintf(&w, `{"time":%q,"job":%q,"event":"start","host":"web1","pid":%d}`+"\n", t, job, s.pid)
		fmt.Fprintf(&w, `{"time":%q,"job":%q,"event":"end","host":"web1","pid":%d,"status":"success","exit_code":0,"duration_seconds":0.2}`+"\n", t, job, s.pid)
	}
	return w.Bytes()
}

// logSize is the run log's size.
func (s *streamBench) logSize(b *testing.B) int64 {
	fi, err := s.log.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func (s *streamBench) records() uint64 {
	_, srcs := s.e.Tracker().View()
	if len(srcs) == 0 {
		return 0
	}
	return srcs[0].Records
}

func (s *streamBench) waitRecords(b *testing.B, n uint64) {
	b.Helper()
	testproc.WaitUntil(b, 2*time.Minute, fmt.Sprintf("%d records", n), func() bool { return s.records() >= n })
}

// streamWriter is the application appending to the run log at a steady
// rate: another process (this test binary again, running
// TestStreamWriterProcess), as it is in production, so that its writes,
// its timer's wake-ups and their system time are not counted as
// jobwatch's. Its records are formatted before it starts.
type streamWriter struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bytes.Buffer // what it printed: shown if it fails
}

// startWriter starts a writer of rate records a second, in benchWrites
// writes a second, with enough records for d (and some to spare), and
// returns once it writes.
func (s *streamBench) startWriter(b *testing.B, rate int, d time.Duration) *streamWriter {
	b.Helper()
	writes := benchWrites()
	var chunks []byte
	for range int(d.Seconds()*float64(writes)) + 2*writes {
		chunk := s.format(max(rate/writes, 2), true)
		chunks = binary.AppendUvarint(chunks, uint64(len(chunk)))
		chunks = append(chunks, chunk...)
	}
	path := filepath.Join(b.TempDir(), "chunks")
	if err := os.WriteFile(path, chunks, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JOBWATCH_STREAM_CHUNKS="+path, "JOBWATCH_STREAM_LOG="+s.log.Name(), fmt.Sprintf("JOBWATCH_STREAM_WRITES=%d", writes),
		"JOBWATCH_STREAM_AGE="+benchAge(b).String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	// It says on its fd 3 when it begins writing.
	ready, readyW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer ready.Close()
	cmd.ExtraFiles = []*os.File{readyW}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		b.Fatal(err)
	}
	if line, err := bufio.NewReader(ready).ReadString('\n'); err != nil || line != "writing\n" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("the writer process did not start writing: %q, %v\n%s", line, err, out.Bytes())
	}
	return &streamWriter{cmd: cmd, stdin: stdin, out: &out}
}

// stop stops the writer and returns the CPU time it used.
func (w *streamWriter) stop(b *testing.B) time.Duration {
	b.Helper()
	w.stdin.Close()
	if err := w.cmd.Wait(); err != nil {
		b.Fatalf("writer process: %v\n%s", err, w.out.Bytes())
	}
	return w.cmd.ProcessState.UserTime() + w.cmd.ProcessState.SystemTime()
}

// TestStreamWriterProcess is the writer process of startWriter: it appends
// the chunks of JOBWATCH_STREAM_CHUNKS (each a uvarint length and its bytes)
// to JOBWATCH_STREAM_LOG, JOBWATCH_STREAM_WRITES a second, until its stdin
// closes; it fails if it runs out of them first. Each write's records are
// stamped as it writes them, less JOBWATCH_STREAM_AGE.
func TestStreamWriterProcess(t *testing.T) {
	path := os.Getenv("JOBWATCH_STREAM_CHUNKS")
	if path == "" {
		t.Skip("the writer process of the persistence benchmarks")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := strconv.Atoi(os.Getenv("JOBWATCH_STREAM_WRITES"))
	if err != nil || writes <= 0 {
		t.Fatalf("JOBWATCH_STREAM_WRITES: %v", err)
	}
	age, err := time.ParseDuration(os.Getenv("JOBWATCH_STREAM_AGE"))
	if err != nil {
		t.Fatalf("JOBWATCH_STREAM_AGE: %v", err)
	}
	log, err := os.OpenFile(os.Getenv("JOBWATCH_STREAM_LOG"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	tick := time.NewTicker(time.Second / time.Duration(writes))
	defer tick.Stop()
	if _, err := os.NewFile(3, "ready").WriteString("writing\n"); err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		n, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < n {
			t.Fatal("chunks file cut short")
		}
		chunk := bytes.ReplaceAll(data[k:k+int(n)], []byte(stampSlot), []byte(time.Now().Add(-age).UTC().Format(stampLayout)))
		if _, err := log.Write(chunk); err != nil {
			t.Fatal(err)
		}
		data = data[k+int(n):]
	}
	t.Fatal("the stream ran out of records formatted before it")
}

func (s *streamBench) close(b *testing.B) {
	s.cancel()
	if err := <-s.done; err != nil {
		b.Error(err)
	}
	s.log.Close()
}

// procIO returns this process's write_bytes (bytes sent to storage) from
// /proc/self/io.
func procIO(b *testing.B) (writeBytes uint64) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io:", err)
	}
	for line := range bytes.Lines(data) {
		k, v, _ := strings.Cut(strings.TrimSpace(string(line)), ": ")
		if k == "write_bytes" {
			writeBytes, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return writeBytes
}

// profileWindow writes a CPU profile of the measured window alone to the
// file JOBWATCH_BENCH_CPUPROFILE names, and an execution trace of it to
// JOBWATCH_BENCH_TRACE's, each if set (-test.cpuprofile and -test.trace
// would hold the set-up's 10,000-job config and catch-up too); it returns
// their stop.
func profileWindow(b *testing.B) (stop func()) {
	var stops []func()
	start := func(env string, begin func(io.Writer) error, end func()) {
		path := os.Getenv(env)
		if path == "" {
			return
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := begin(f); err != nil {
			b.Fatal(err)
		}
		stops = append(stops, func() { end(); f.Close() })
	}
	start("JOBWATCH_BENCH_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	start("JOBWATCH_BENCH_TRACE", trace.Start, trace.Stop)
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPersistence is the cost of keeping the state on disk with 10,000
// jobs while a writer process appends 200 records a second
// (JOBWATCH_BENCH_RATE; start and end pairs, so 100 jobs change a second)
// and nothing scrapes: bytes jobwatch sends to storage a minute
// (/proc/self/io write_bytes, less the run log's bytes) and the share
// of one core jobwatch uses (reading and applying the records as well,
// which is small: see the ingest figures), the writer's shown apart.
//
//	go test -run '^$' -bench Persistence -benchtime 1x ./exporter
func BenchmarkPersistence(b *testing.B) {
	s := startStreamBench(b, 10000)
	defer s.close(b)
	d := benchWindow()
	for b.Loop() {
		w := s.startWriter(b, benchRate(), d)
		stopProfile := profileWindow(b)
		w0, c0, t0, log0 := procIO(b), cpuTime(b), time.Now(), s.logSize(b)
		time.Sleep(d) // the writer writes meanwhile
		writer := w.stop(b)
		stopProfile()
		w1, c1, el, log1 := procIO(b), cpuTime(b), time.Since(t0), s.logSize(b)
		jobwatch := c1 - c0
		// On ext4 the journal commit of jobwatch's fdatasync writes the run
		// log's new pages too, and they are charged to jobwatch: the log's
		// bytes are taken off (with the log on tmpfs, write_bytes less nothing
		// gave the same figure, 5.90 MB a minute).
		written := float64(w1-w0) - float64(log1-log0)
		b.ReportMetric(max(written, 0)/1e6/el.Minutes(), "MB-written/min")
		b.ReportMetric(100*float64(jobwatch)/float64(el), "%-of-a-core")
		b.ReportMetric(jobwatch.Seconds()/el.Minutes(), "CPU-s/min")
		b.ReportMetric(100*float64(writer)/float64(el), "writer-%-of-a-core")
	}
	ents, _ := os.ReadDir(s.e.opts.StateDir)
	for _, ent := range ents {
		if fi, err := ent.Info(); err == nil {
			b.Logf("state file %s: %d bytes", ent.Name(), fi.Size())
		}
	}
	keepState(b, s.e.opts.StateDir)
}

// keepState copies the state files to the directory JOBWATCH_BENCH_KEEP
// names, if set, to look at what the window wrote (the benchmark's own
// directory is removed when it ends).
func keepState(b *testing.B, dir string) {
	keep := os.Getenv("JOBWATCH_BENCH_KEEP")
	if keep == "" {
		return
	}
	for _, name := range []string{"state.snap", "state.log"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(keep, name), data, 0o600)
		}
		if err != nil {
			b.Errorf("keeping the state: %v", err)
		}
	}
}

// BenchmarkScrapeWhileStreaming is a scrape of 10,000 jobs (Gather and text
// encoding, back to back) while a writer appends 1,000 records a second.
//
//	go test -run '^$' -bench ScrapeWhileStreaming -benchtime 1x ./exporter
func BenchmarkScrapeWhileStreaming(b *testing.B) {
	s := startStreamBench(b, 10000)
	defer s.close(b)
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.e.Collectors()...)
	d := benchWindow()
	for b.Loop() {
		var lat []time.Duration
		w := s.startWriter(b, 1000, d)
		for end := time.Now().Add(d); time.Now().Before(end); {
			t0 := time.Now()
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					b.Fatal(err)
				}
			}
			lat = append(lat, time.Since(t0))
		}
		w.stop(b)
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat)), "scrapes")
		b.ReportMetric(lat[len(lat)/2].Seconds()*1000, "ms-p50")
		b.ReportMetric(lat[len(lat)*9/10].Seconds()*1000, "ms-p90")
		b.ReportMetric(lat[len(lat)-1].Seconds()*1000, "ms-max")
	}
}
