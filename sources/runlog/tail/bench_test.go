package tail

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkTail reads a 100 MB file of 150-byte lines with a Tailer and, in
// the same run, counts its lines with wc -l, for comparison.
//
//	go test -run XXX -bench Tail -benchtime 10x ./sources/runlog/tail/
func BenchmarkTail(b *testing.B) {
	const lineLen, total = 150, 100 << 20
	path := filepath.Join(b.TempDir(), "runs.log")
	line := `{"time":"2024-01-31T12:00:00Z","job":"backup","event":"end","status":"success","pid":12345,"exit_code":0,"run_id":"r-0000000001","duration":` + "\n"
	line = strings.Repeat("x", lineLen-len(line)) + line
	n := total / lineLen
	if err := os.WriteFile(path, []byte(strings.Repeat(line, n)), 0o644); err != nil {
		b.Fatal(err)
	}
	size := int64(n * lineLen)

	b.Run("tail", func(b *testing.B) {
		b.SetBytes(size)
		start := time.Now()
		for range b.N {
			w := NewStepWaker()
			tl := New(path, nil, Options{Waker: w})
			ctx, cancel := context.WithCancel(context.Background())
			got := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				tl.Run(ctx, func(lines []Line, _ Position, _ int) { got += len(lines) })
			}()
			w.Idle()
			cancel()
			<-done
			if got != n {
				b.Fatalf("read %d lines, want %d", got, n)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "lines/s")
	})
	b.Run("wc-l", func(b *testing.B) {
		if _, err := exec.LookPath("wc"); err != nil {
			b.Skip("wc not found (Debian package coreutils)")
		}
		b.SetBytes(size)
		start := time.Now()
		for range b.N {
			out, err := exec.Command("wc", "-l", path).Output()
			if err != nil {
				b.Fatal(err)
			}
			if f := strings.Fields(string(out)); len(f) == 0 || f[0] != strconv.Itoa(n) {
				b.Fatalf("wc -l: %s, want %d lines", out, n)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "lines/s")
	})
}
