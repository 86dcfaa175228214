package record

import (
	"bytes"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The benchmark lines are the records of the spec, every field present.
var (
	benchJSON   = [][]byte{[]byte(jsonStart), []byte(jsonEnd), []byte(jsonSkip)}
	benchLogfmt = [][]byte{[]byte(lfStart), []byte(lfEnd), []byte(lfSkip)}
	benchRegex  = [][]byte{
		[]byte("2026-11-30 18:00:00.123 INFO [scheduler] [stats] started (pid 4242)"),
		[]byte("2026-11-30 18:00:40.500 INFO [scheduler] [stats] finished in 40.4s, exit 0"),
		[]byte("2026-11-30 19:00:00.010 WARN [scheduler] [stats] previous run still running, skipping"),
	}
	benchUnrelated = [][]byte{
		[]byte("2026-11-30 18:00:00.123 INFO [web] GET /index.html 200 12ms remote=10.0.0.1"),
		[]byte("2026-11-30 18:00:00.124 DEBUG [db] pool stats: open=12 idle=4 in_use=8 wait=0"),
		[]byte("2026-11-30 18:00:00.125 INFO [scheduler] [stats] loaded 1234 rows from warehouse"),
	}
)

func avgLen(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n / len(lines)
}

// runParser parses lines round-robin and reports records/s.
func runParser(b *testing.B, lines [][]byte, parse func([]byte, *model.Event) error, wantErr error) {
	b.ReportAllocs()
	b.SetBytes(int64(avgLen(lines)))
	var ev model.Event
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if err := parse(lines[n%len(lines)], &ev); err != wantErr {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	// The machine is shared: records per second of CPU time this process
	// used is steadier than records per second of wall time.
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "records/cpu-s")
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stdRecord is the record decoded with encoding/json, for comparison.
type stdRecord struct {
	Time      time.Time `json:"time"`
	Job       string    `json:"job"`
	Event     string    `json:"event"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	RunID     string    `json:"run_id"`
	Status    string    `json:"status"`
	ExitCode  *int      `json:"exit_code"`
	Duration  *float64  `json:"duration_seconds"`
	Reason    string    `json:"reason"`
	HolderPID int       `json:"holder_pid"`
}

func BenchmarkParseJSON(b *testing.B) {
	b.Run("record", func(b *testing.B) {
		runParser(b, benchJSON, NewJSON(Options{}).Parse, nil)
	})
	b.Run("encoding_json", func(b *testing.B) {
		runParser(b, benchJSON, func(line []byte, _ *model.Event) error {
			var r stdRecord
			return json.Unmarshal(line, &r)
		}, nil)
	})
}

func BenchmarkParseLogfmt(b *testing.B) {
	runParser(b, benchLogfmt, NewLogfmt(Options{}).Parse, nil)
}

func BenchmarkParseRegex(b *testing.B) {
	opts := Options{TimeFormat: "2006-01-02 15:04:05.000", Location: shanghai}
	b.Run("match", func(b *testing.B) {
		p, _ := NewRegex(fuzzPatterns, opts)
		runParser(b, benchRegex, p.Parse, nil)
	})
	b.Run("unrelated", func(b *testing.B) {
		p, _ := NewRegex(fuzzPatterns, opts)
		runParser(b, benchUnrelated, p.Parse, ErrNoMatch)
	})
	b.Run("unrelated_no_prefilter", func(b *testing.B) {
		p, _ := NewRegex(fuzzPatterns, opts)
		for i := range p.(*regexParser).pats {
			p.(*regexParser).pats[i].lit = nil
		}
		runParser(b, benchUnrelated, p.Parse, ErrNoMatch)
	})
}

// BenchmarkParseCron parses the real cron's lines at -L 15 and -L 7
// (testdata/cron) one after another, as a run log of format cron reads
// them: CMD, error and END lines linked into runs.
func BenchmarkParseCron(b *testing.B) {
	var lines [][]byte
	for _, f := range []string{"testdata/cron/L15-traditional.log", "testdata/cron/L7-traditional.log"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSpace(data), []byte("\n"))...)
	}
	p, err := NewCron(cronCommands, time.UTC, func() time.Time { return cronNow })
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(avgLen(lines)))
	b.ReportAllocs()
	var ev model.Event
	for n := 0; b.Loop(); n++ {
		_ = p.Parse(lines[n%len(lines)], &ev)
	}
}
