package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/internal/testproc"
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
	// writerCPU is the CPU time the stream's writer thread used.
	writerCPU time.Duration
}

func startStreamBench(b *testing.B, n int) *streamBench {
	b.Helper()
	dir := b.TempDir()
	var cfg strings.Builder
	cfg.WriteString("jobs:\n")
	for i := range n {
		fmt.Fprintf(&cfg, "  - name: job_%05d\n    every: 1h\n", i)
	}
	cfg.WriteString("sources:\n  - name: runs\n    type: runlog\n    path: runs.log\n    format: json\n")
	if err := os.WriteFile(filepath.Join(dir, "jobwatch.yml"), []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "runs.log"))
	if err != nil {
		b.Fatal(err)
	}
	s := &streamBench{log: log, n: n, when: time.Now().Add(-time.Hour)}
	s.write(b, 2*n) // a finished run of every job
	s.e, err = New(Options{StartupHold: -1, ConfigFile: filepath.Join(dir, "jobwatch.yml"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- s.e.Run(ctx) }()
	// The saves of the catch-up are not part of what is measured: they are
	// over once the records and the source's health are saved.
	s.waitRecords(b, uint64(2*n))
	testproc.WaitUntil(b, 2*time.Minute, "the catch-up saved", func() bool {
		srcs := s.e.Saved().Sources()
		return len(srcs) == 1 && srcs[0].Up && srcs[0].Records == uint64(2*n)
	})
	return s
}

// write appends records: start and end pairs, each pair on the next job.
func (s *streamBench) write(b *testing.B, records int) {
	if _, err := s.log.Write(s.format(records)); err != nil {
		b.Fatal(err)
	}
}

// format is the next records of write, start and end pairs.
func (s *streamBench) format(records int) []byte {
	var w bytes.Buffer
	for range records / 2 {
		job := fmt.Sprintf("job_%05d", s.next%s.n)
		s.next++
		s.pid++
		s.when = s.when.Add(time.Millisecond)
		t := s.when.UTC().Format(time.RFC3339Nano)
		fmt.Fprintf(&w, `{"time":%q,"job":%q,"event":"start","host":"web1","pid":%d}`+"\n", t, job, s.pid)
		fmt.Fprintf(&w, `{"time":%q,"job":%q,"event":"end","host":"web1","pid":%d,"status":"success","exit_code":0,"duration_seconds":0.2}`+"\n", t, job, s.pid)
	}
	return w.Bytes()
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

// stream writes rate records a second, in benchWrites writes a second, for
// d. The writes are formatted before the stream starts: the process's CPU
// time measured is jobwatch's, not the writer's formatting (a sixth of it
// at 200 records a second).
func (s *streamBench) stream(b *testing.B, rate int, d time.Duration, during func()) {
	writes := benchWrites()
	chunks := make([][]byte, int(d.Seconds()*float64(writes))+2*writes)
	for i := range chunks {
		chunks[i] = s.format(max(rate/writes, 2))
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		// The writer stands for the application writing its run log, another
		// process: on a thread of its own, whose CPU (its writes' system
		// time above all) is not jobwatch's (writerCPU).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		from := threadCPU(b)
		defer func() { s.writerCPU += threadCPU(b) - from }()
		tick := time.NewTicker(time.Second / time.Duration(writes))
		defer tick.Stop()
		for _, chunk := range chunks {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := s.log.Write(chunk); err != nil {
					b.Error(err)
					return
				}
			}
		}
		b.Error("the stream ran out of records formatted before it")
	}()
	if during == nil {
		time.Sleep(d) // the stream's length: the writer writes meanwhile
	}
	for end := time.Now().Add(d); during != nil && time.Now().Before(end); {
		during()
	}
	close(stop)
	<-finished
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
// file JOBWATCH_BENCH_CPUPROFILE names, if set (-test.cpuprofile would hold
// the set-up's 10,000-job config and catch-up too); it returns its stop.
func profileWindow(b *testing.B) (stop func()) {
	path := os.Getenv("JOBWATCH_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	stopTrace := func() {}
	if tp := os.Getenv("JOBWATCH_BENCH_TRACE"); tp != "" {
		tf, err := os.Create(tp)
		if err != nil {
			b.Fatal(err)
		}
		if err := trace.Start(tf); err != nil {
			b.Fatal(err)
		}
		stopTrace = func() { trace.Stop(); tf.Close() }
	}
	return func() { pprof.StopCPUProfile(); f.Close(); stopTrace() }
}

// threadCPU is the CPU time of the calling goroutine's thread (locked to
// it).
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPersistence is the cost of keeping the state on disk with 10,000
// jobs while a writer appends 200 records a second (JOBWATCH_BENCH_RATE;
// start and end pairs, so 100 jobs change a second) and nothing scrapes: bytes the process sends to
// storage a minute (/proc/self/io write_bytes, less the run log the writer
// appends) and the share of one core jobwatch uses (reading and applying
// the records as well, which is small: see the ingest figures), the
// process's CPU less the writer thread's, shown apart.
//
//	go test -run '^$' -bench Persistence -benchtime 1x ./exporter
func BenchmarkPersistence(b *testing.B) {
	s := startStreamBench(b, 10000)
	defer s.close(b)
	d := benchWindow()
	for b.Loop() {
		logBefore, _ := s.log.Seek(0, io.SeekCurrent)
		stopProfile := profileWindow(b)
		w0, c0, t0, wc0 := procIO(b), cpuTime(b), time.Now(), s.writerCPU
		s.stream(b, benchRate(), d, nil)
		stopProfile()
		logAfter, _ := s.log.Seek(0, io.SeekCurrent)
		w1, c1, el := procIO(b), cpuTime(b), time.Since(t0)
		written := float64(w1-w0) - float64(logAfter-logBefore)
		writer := s.writerCPU - wc0
		jobwatch := c1 - c0 - writer
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
		s.stream(b, 1000, d, func() {
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
		})
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat)), "scrapes")
		b.ReportMetric(lat[len(lat)/2].Seconds()*1000, "ms-p50")
		b.ReportMetric(lat[len(lat)*9/10].Seconds()*1000, "ms-p90")
		b.ReportMetric(lat[len(lat)-1].Seconds()*1000, "ms-max")
	}
}
