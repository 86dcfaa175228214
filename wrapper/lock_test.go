package wrapper

import (
	"os"
	"strings"
	"testing"
)

func TestFindFlockHolder(t *testing.T) {
	data, err := os.ReadFile("testdata/proc_locks")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		major, minor uint32
		ino          uint64
		want         int
	}{
		{"holder, not the waiter", 0xfe, 0, 9978034, 4242},
		{"hex major", 0x103, 2, 55, 5150},
		{"posix lock is not flock", 0xfe, 0, 778397, 0},
		{"lease is not flock", 8, 1, 777, 0},
		{"ofd lock without pid", 8, 1, 123, 0},
		{"bad pid", 8, 1, 42, 0},
		{"other device", 0xfe, 1, 9978034, 0},
		{"absent", 1, 1, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := findFlockHolder(strings.NewReader(string(data)), tc.major, tc.minor, tc.ino); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func FuzzFindFlockHolder(f *testing.F) {
	data, err := os.ReadFile("testdata/proc_locks")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data), uint32(0xfe), uint32(0), uint64(9978034))
	f.Add("1: FLOCK ADVISORY WRITE 1 0:0:0 0 EOF\n", uint32(0), uint32(0), uint64(0))
	f.Add("", uint32(0), uint32(0), uint64(0))
	f.Fuzz(func(t *testing.T, text string, major, minor uint32, ino uint64) {
		if pid := findFlockHolder(strings.NewReader(text), major, minor, ino); pid < 0 {
			t.Fatalf("negative pid %d", pid)
		}
	})
}

func TestParseStat(t *testing.T) {
	cases := []struct {
		line string
		want procStat
		ok   bool
	}{
		{"4242 (sleep) S 4241 4242 100 0 -1", procStat{'S', 4241, 4242}, true},
		{"17 (a) b) (c) Z 1 9 9 0", procStat{'Z', 1, 9}, true},
		{"17 (x) R 1", procStat{}, false},
		{"no parens S 1 2", procStat{}, false},
		{"17 (x) RS 1 2", procStat{}, false},
		{"17 (x) S 1 notanumber", procStat{}, false},
		{"17 (x) S x 1", procStat{}, false},
		{"", procStat{}, false},
	}
	for _, tc := range cases {
		got, ok := parseStat([]byte(tc.line))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStat(%q) = %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sleep) S 4241 4242 100 0 -1"))
	f.Add([]byte("1 ()) Z 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b)
	})
}
