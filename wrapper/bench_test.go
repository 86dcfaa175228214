package wrapper

import (
	"io"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkRun compares running `true` directly (os/exec) with running it
// through Run in this process: the wrapper's own work (lock, records, process
// group, waiting), without the start-up of the jobwatch binary.
//
//	go test -run XXX -bench 'Run$' -benchtime 300x ./wrapper
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"wrapped", Options{}},
		{"wrapped-lock-timeout", Options{Lock: filepath.Join(dir, "bench.lock"), Timeout: 60e9, KillAfter: DefaultKillAfter}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			o := bc.o
			o.Job, o.Log, o.Command = "bench", filepath.Join(dir, "runs.log"), []string{"true"}
			o.Stdout, o.Stderr = io.Discard, io.Discard
			for b.Loop() {
				if code := Run(o); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
