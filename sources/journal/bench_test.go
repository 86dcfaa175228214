package journal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Benchmarks of catch-up, against journalctl --output=json printing the same
// journal files. The journals are built once (a minute or so for the large
// one) under $JOBWATCH_BENCH_DIR or the temp directory, and kept:
//
//	go test ./sources/ -run '^$' -bench BenchmarkJournalCatchUp -benchtime 5x
//
// jRelevant80k: 80,000 entries, all of them about the configured units
// (lifecycle entries and the units' own output).
// jSparse1M: 1,000,000 entries of other daemons and 1,002 relevant ones.

func jBenchJournal(b *testing.B, name string, n int, gen func(h *journaltest.Host, i int) journaltest.Entry) string {
	b.Helper()
	needJournalTools(b)
	root := os.Getenv("JOBWATCH_BENCH_DIR")
	if root == "" {
		root = filepath.Join(os.TempDir(), "jobwatch-journal-bench-v1")
	}
	dir := filepath.Join(root, name)
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	began := time.Now()
	h := journaltest.NewHost("web1", jBoot0)
	if err := journaltest.AppendStream(filepath.Join(dir, "system.journal"), n, func(i int) journaltest.Entry { return gen(h, i) }); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %s (%d entries) in %v", dir, n, time.Since(began))
	return dir
}

// jRunEntry is entry k of a successful run of unit starting at t.
func jRunEntry(h *journaltest.Host, unit string, run, k int, t time.Time) journaltest.Entry {
	inv := journaltest.InvocationID(fmt.Sprint(unit, run))
	switch k {
	case 0:
		return h.Starting(t, unit, inv)
	case 1:
		return h.Output(t, unit, inv, 1000+run%30000, "working on it")
	case 2:
		return h.Output(t, unit, inv, 1000+run%30000, "done")
	case 3:
		return h.Deactivated(t, unit, inv)
	case 4:
		return h.Finished(t, unit, inv)
	default:
		return h.Consumed(t, unit, inv)
	}
}

func jRelevant80k(h *journaltest.Host, i int) journaltest.Entry {
	t := jBase.Add(time.Duration(i) * 10 * time.Millisecond)
	run := i / 6
	unit := "stats.service"
	if run%2 == 1 {
		unit = "backup.service"
	}
	return jRunEntry(h, unit, run, i%6, t)
}

const jSparseTotal = 1_000_000 + 1_002

func jSparse1M(h *journaltest.Host, i int) journaltest.Entry {
	t := jBase.Add(time.Duration(i) * 10 * time.Millisecond)
	// Entries 0, 1000, 2000, ... (1,002 of them) belong to runs of
	// stats.service, six entries a run.
	if i%1000 == 0 {
		j := i / 1000
		return jRunEntry(h, "stats.service", j/6, j%6, t)
	}
	idents := []string{"nginx", "sshd", "kernel", "dbus-daemon", "postgres"}
	return h.Other(t, idents[i%len(idents)], 200+i%5, fmt.Sprintf("GET /api/items/%d 200 %d bytes", i, i%4096))
}

type jCountingSink struct{ events, batches atomic.Int64 }

func (s *jCountingSink) Apply(b model.Batch) {
	s.events.Add(int64(len(b.Events)))
	s.batches.Add(1)
}
func (s *jCountingSink) SetHealth(string, bool, error) {}

func BenchmarkJournalCatchUp(b *testing.B) {
	fixtures := []struct {
		name    string
		n       int
		gen     func(*journaltest.Host, int) journaltest.Entry
		wantEvs int64
	}{
		{"relevant80k", 80_000, jRelevant80k, (80_000+5)/6 + (80_000+2)/6},
		{"sparse1M", jSparseTotal, jSparse1M, 2 * 167},
	}
	for _, fx := range fixtures {
		dir := jBenchJournal(b, fx.name, fx.n, fx.gen)
		name := "bench"
		src := Config{Directory: dir, Units: jUnits}
		j, err := New(name, src, sources.Deps{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fx.name+"/journalctl-json", func(b *testing.B) {
			defer jReportCPU(b)()
			for b.Loop() {
				cmd := exec.Command("journalctl", "--directory="+dir, "--output=json", "--no-pager")
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fx.name+"/journalctl-jobwatch-args", func(b *testing.B) {
			r := j.newReader(nil, nil)
			defer jReportCPU(b)()
			for b.Loop() {
				cmd := exec.Command("journalctl", r.args(false)...)
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fx.name+"/decode-apply", func(b *testing.B) {
			// jobwatch's own work on journalctl's output, without journalctl.
			r := j.newReader(nil, nil)
			out, err := exec.Command("journalctl", r.args(false)...).Output()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			var sink *jCountingSink
			for b.Loop() {
				sink = &jCountingSink{}
				r := j.newReader(nil, sink)
				lines := make(chan [][]byte, 4)
				go func() {
					defer close(lines)
					if err := readLines(context.Background(), bytes.NewReader(out), j.maxLine, lines); err != nil {
						b.Error(err)
					}
				}()
				for chunk := range lines {
					for _, l := range chunk {
						r.line(l)
					}
					if r.pending >= j.maxBatch {
						r.flush(false)
					}
				}
				r.flush(false)
			}
			if got := sink.events.Load(); got != fx.wantEvs {
				b.Errorf("%d events, want %d", got, fx.wantEvs)
			}
		})
		b.Run(fx.name+"/jobwatch", func(b *testing.B) {
			var sink *jCountingSink
			defer jReportCPU(b)()
			for b.Loop() {
				sink = &jCountingSink{}
				r := j.newReader(nil, sink)
				if err := r.read(context.Background(), false); err != nil {
					b.Fatal(err)
				}
			}
			if got := sink.events.Load(); got != fx.wantEvs {
				b.Errorf("%d events, want %d", got, fx.wantEvs)
			}
			b.ReportMetric(float64(sink.batches.Load()), "batches")
		})
	}
}

// jReportCPU reports the CPU time (user+system) per op that the benchmark's
// process and its journalctl children used: on a shared machine wall time
// depends on the load, CPU time much less.
func jReportCPU(b *testing.B) func() {
	self0, child0 := jCPUTime(syscall.RUSAGE_SELF), jCPUTime(syscall.RUSAGE_CHILDREN)
	return func() {
		self, child := jCPUTime(syscall.RUSAGE_SELF)-self0, jCPUTime(syscall.RUSAGE_CHILDREN)-child0
		n := float64(b.N)
		b.ReportMetric(child.Seconds()/n, "journalctl-cpu-s/op")
		b.ReportMetric(self.Seconds()/n, "go-cpu-s/op")
		b.ReportMetric((self+child).Seconds()/n, "cpu-s/op")
	}
}

func jCPUTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
