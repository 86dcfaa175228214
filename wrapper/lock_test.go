package wrapper

import (
	"os"
	"strings"
	"testing"
	"time"
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

// fakeProcs is a process table with a fake clock for findHolder: the
// wrapper 100 holds the lock; its job 200 is born at jobBorn.
type fakeProcs struct {
	now              time.Time
	jobBorn          time.Time
	released         time.Time // the lock is let go then (zero: never)
	wrapperDies      time.Time // the wrapper dies then (zero: never)
	childrenReadable bool
	passes           int
}

func (p *fakeProcs) view() procView {
	jobAlive := func() bool { return !p.jobBorn.IsZero() && !p.now.Before(p.jobBorn) }
	return procView{
		locker: func() int {
			if !p.released.IsZero() && !p.now.Before(p.released) {
				return 0
			}
			return 100
		},
		children: func(pid int) ([]int, bool) {
			if !p.childrenReadable {
				return nil, false
			}
			p.passes++
			if pid == 100 && jobAlive() {
				return []int{200}, true
			}
			return nil, true
		},
		pids: func() []int {
			p.passes++
			out := []int{1, 100, 150}
			if jobAlive() {
				out = append(out, 200)
			}
			// A pass over a loaded machine's /proc takes a while.
			p.now = p.now.Add(300 * time.Millisecond)
			return out
		},
		stat: func(pid int) (procStat, bool) {
			switch pid {
			case 1:
				return procStat{'S', 0, 1}, true
			case 100:
				if !p.wrapperDies.IsZero() && !p.now.Before(p.wrapperDies) {
					return procStat{}, false
				}
				return procStat{'S', 1, 100}, true
			case 150: // another skipping wrapper
				return procStat{'R', 1, 150}, true
			case 200:
				if jobAlive() {
					return procStat{'S', 100, 200}, true
				}
			}
			return procStat{}, false
		},
		holds:     func(pid int) bool { return pid == 100 || pid == 200 || pid == 150 },
		isWrapper: func(pid int) bool { return pid == 100 || pid == 150 },
		now:       func() time.Time { return p.now },
		sleep:     func(d time.Duration) { p.now = p.now.Add(d) },
	}
}

func TestFindHolder(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		procs fakeProcs
		want  int
	}{
		{"job already running", fakeProcs{jobBorn: t0}, 200},
		{"job born 2 s later, on a loaded machine", fakeProcs{jobBorn: t0.Add(2 * time.Second)}, 200},
		{"job born 2 s later, children read directly", fakeProcs{jobBorn: t0.Add(2 * time.Second), childrenReadable: true}, 200},
		{"wrapper never starts its job", fakeProcs{}, 100},
		{"wrapper lets the lock go", fakeProcs{released: t0.Add(time.Second)}, 0},
		{"wrapper dies, its job holds the lock", fakeProcs{jobBorn: t0.Add(-time.Second), wrapperDies: t0}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.procs
			p.now = t0
			if got := findHolder(p.view(), 150); got != tc.want {
				t.Errorf("holder %d, want %d", got, tc.want)
			}
			if waited := p.now.Sub(t0); waited > holderWait+time.Second {
				t.Errorf("looked for %s, beyond the %s bound", waited, holderWait)
			}
		})
	}
}
