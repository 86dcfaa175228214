package runlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

const benchRecords = 1_000_000

// benchLogs writes run logs of n records of 100 jobs (start and
// end pairs, as jobwatch run writes them) into the benchmark's own temp
// directory, removed when it ends, once per format.
type benchLogs struct {
	n     int
	dir   string
	paths map[string]string
}

func newBenchLogs(b *testing.B, n int) *benchLogs {
	return &benchLogs{n: n, dir: b.TempDir(), paths: map[string]string{}}
}

// get returns the run log of format, writing it on first use.
func (l *benchLogs) get(b *testing.B, format string) string {
	if p, ok := l.paths[format]; ok {
		return p
	}
	dir := l.dir
	path := filepath.Join(dir, "runs."+format)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	t := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < l.n/2; i++ {
		job, pid := fmt.Sprintf("job_%02d", i%100), 1000+i
		start, end := t.Add(time.Duration(i)*time.Second), t.Add(time.Duration(i)*time.Second+40500*time.Millisecond)
		if format == "json" {
			fmt.Fprintf(w, `{"time":"%s","job":"%s","event":"start","host":"web1","pid":%d,"run_id":"%016x"}`+"\n", start.Format("2006-01-02T15:04:05.000Z"), job, pid, i)
			fmt.Fprintf(w, `{"time":"%s","job":"%s","event":"end","host":"web1","pid":%d,"run_id":"%016x","status":"success","exit_code":0,"duration_seconds":40.5}`+"\n", end.Format("2006-01-02T15:04:05.000Z"), job, pid, i)
		} else {
			fmt.Fprintf(w, "time=%s job=%s event=start host=web1 pid=%d run_id=%016x\n", start.Format("2006-01-02T15:04:05.000Z"), job, pid, i)
			fmt.Fprintf(w, "time=%s job=%s event=end host=web1 pid=%d run_id=%016x status=success exit_code=0 duration_seconds=40.5\n", end.Format("2006-01-02T15:04:05.000Z"), job, pid, i)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	l.paths[format] = path
	return path
}

// BenchmarkIngest reads a whole run log into a tracker: tail, parse, apply.
// The wc_l case runs `wc -l` on the same file in the same run, the floor any
// line reader is measured against.
func BenchmarkIngest(b *testing.B) { benchIngest(b, benchRecords) }

// benchIngest is BenchmarkIngest on run logs of n records.
func benchIngest(b *testing.B, n int) {
	logs := newBenchLogs(b, n)
	for _, format := range []string{"json", "logfmt"} {
		b.Run(format, func(b *testing.B) {
			path := logs.get(b, format)
			fi, _ := os.Stat(path)
			jobs := make([]model.JobSpec, 100)
			for i := range jobs {
				jobs[i] = model.JobSpec{Name: fmt.Sprintf("job_%02d", i), Schedule: schedule.Every(time.Hour), StaleMultiple: 2}
			}
			b.SetBytes(fi.Size())
			cpu0 := cpuTime()
			for b.Loop() {
				tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "bench", Alive: func(int) bool { return true }})
				tr.Configure(jobs, []model.SourceSpec{{Name: "runs", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}}) // as the exporter configures it
				src := newRunLog(&testing.T{}, path, format)
				w := &benchWaker{idle: make(chan struct{})}
				src.waker = w
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { src.Run(ctx, nil, tr); close(done) }()
				<-w.idle // the first pass read the whole file
				cancel()
				<-done
				if _, srcs := tr.View(); srcs[0].Records != uint64(n) {
					b.Fatalf("read %d records, want %d", srcs[0].Records, n)
				}
			}
			reportRates(b, n, cpuTime()-cpu0)
		})
		b.Run(format+"_wc_l", func(b *testing.B) {
			path := logs.get(b, format)
			var cpu time.Duration
			for b.Loop() {
				cmd := exec.Command("wc", "-l", path)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("wc -l: %v %s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			reportRates(b, n, cpu)
		})
	}
}

// benchWaker is the tailer's waker in the ingest benchmark: its first Wait
// says that the first pass is over, and it waits for as long as that pass
// took. tail.StepWaker gives up after 30 s, which a pass over 1,000,000
// records can take on a loaded machine.
type benchWaker struct{ idle chan struct{} }

func (w *benchWaker) Wait(ctx context.Context) error {
	select {
	case w.idle <- struct{}{}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	return ctx.Err()
}

// reportRates reports records per second of wall time and per second of CPU
// time: on a shared, noisy machine the CPU figure is the one that compares.
func reportRates(b *testing.B, records int, cpu time.Duration) {
	n := float64(records) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(n/cpu.Seconds(), "records/cpu-s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBenchmarkCleansUp runs the ingest benchmark on small logs with its own
// TMPDIR, which must be empty afterwards: a benchmark run leaves nothing
// behind (it used to leave 270 MB a run).
func TestBenchmarkCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a benchmark")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := testing.Benchmark(func(b *testing.B) { benchIngest(b, 2000) })
	if res.N == 0 {
		t.Fatal("the benchmark failed")
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in TMPDIR: %s", e.Name())
	}
}
