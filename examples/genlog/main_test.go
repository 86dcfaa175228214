package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) {
	for _, tc := range []struct{ name, now string }{
		{"morning", "2026-12-01T09:20:00Z"},
		{"just-after-backup-slot", "2026-12-01T02:31:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now, _ := time.Parse(time.RFC3339, tc.now)
			var b bytes.Buffer
			if err := write(&b, now); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("output differs from %s (go test -update to rewrite):\n%s", golden, b.String())
			}
		})
	}
}

// Every record lies in the past, in time order, and the backup run has
// ended, whatever the time of day.
func TestRecordsInThePastInOrder(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for now := start; now.Before(start.Add(24 * time.Hour)); now = now.Add(7*time.Minute + 13*time.Second) {
		var b bytes.Buffer
		if err := write(&b, now); err != nil {
			t.Fatal(err)
		}
		var last time.Time
		records := 0
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			var r struct{ Time time.Time }
			if json.Unmarshal([]byte(line), &r) != nil {
				continue // the one line that is not a record
			}
			records++
			if r.Time.After(now) || r.Time.Before(last) {
				t.Fatalf("now %s: record at %s after %s or in the future:\n%s", now, r.Time, last, b.String())
			}
			last = r.Time
		}
		if records != 18 {
			t.Fatalf("now %s: %d records", now, records)
		}
	}
}
