package locks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/sources"
)

// runSource runs src with its rounds stepped by the returned stepper.
// stop ends Run and waits until it has returned (failing the test when it
// does not); the end of the test calls it too.
func runSource(t *testing.T, src *Source) (snk *sink, step stepper, stop func()) {
	t.Helper()
	step = stepper{next: make(chan struct{})}
	src.wait = step.wait
	snk = &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, nil, snk) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := testproc.Receive(t, done, 30*time.Second, "Run to return"); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return snk, step, stop
}

// A Redis server that stops answering (SIGSTOP) holds back no other lock:
// a key on another server and a PID file are seen free as soon as they
// are, while the stopped server's probe is still in flight, and its error
// comes at the probe timeout (the interval, 1 s), not at go-redis' read
// timeout. One after another, every lock was seen late by that timeout,
// and the error came after 5 s.
func TestStoppedRedisHoldsBackNoOtherLock(t *testing.T) {
	stopped, healthy := startRedis(t), startRedis(t)
	pidfile := filepath.Join(t.TempDir(), "cleanup.lock")
	testproc.WriteFile(t, pidfile, strconv.Itoa(os.Getpid())+"\n")
	stopped.do(t, "SET", "lock:b", "web2:1:run")
	healthy.do(t, "SET", "lock:a", "web3:1:run")
	c := decodeYAML(t, fmt.Sprintf(`
interval: 1s
locks:
  - {job: b, redis: "redis://%s/0", key: "lock:b"}
  - {job: a, redis: "redis://%s/0", key: "lock:a"}
  - {job: cleanup, pidfile: %q}
`, stopped.addr, healthy.addr, pidfile))
	src, err := New("locks", c, sources.Deps{Logger: discard(), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	snk, step, _ := runSource(t, src)
	snk.waitBatch(t, "every lock held", func(b batch) bool {
		return b.Locks[0].Held && b.Locks[1].Held && b.Locks[2].Held
	})

	stopped.srv.Pause()
	healthy.do(t, "DEL", "lock:a")
	if err := os.Remove(pidfile); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step.next <- struct{}{}
	b := snk.waitBatch(t, "the healthy locks seen free", func(b batch) bool { return !b.Locks[1].Held && !b.Locks[2].Held })
	if took := time.Since(start); took >= src.interval {
		t.Errorf("the healthy locks were seen free after %v, want within the interval (%v)", took, src.interval)
	}
	if b.Locks[0].ProbeErrors != 0 {
		t.Errorf("the healthy locks were seen only with the stopped server's error: %+v", b.Locks)
	}
	snk.waitBatch(t, "the stopped server's error", func(b batch) bool { return b.Locks[0].ProbeErrors == 1 })
	if took, bound := time.Since(start), src.probeTimeout()+2*time.Second; took > bound {
		t.Errorf("the stopped server's error came after %v, want within the probe timeout and slack (%v)", took, bound)
	}
	if err := snk.lastHealth(); err == nil || !strings.Contains(err.Error(), `lock "lock:b" of job "b"`) {
		t.Errorf("health %v, want down naming the stopped server's lock", err)
	}
}

// gatedProbe is a server that answers only when the test lets it: it
// counts the probes started and those in flight.
type gatedProbe struct {
	started, live, maxLive atomic.Int32
	answer                 chan struct{}
}

func (p *gatedProbe) probe(ctx context.Context, _ time.Time) (State, error) {
	p.started.Add(1)
	n := p.live.Add(1)
	for m := p.maxLive.Load(); n > m && !p.maxLive.CompareAndSwap(m, n); m = p.maxLive.Load() {
	}
	defer p.live.Add(-1)
	select {
	case <-p.answer:
		return State{Kind: kindRedis, Held: true}, nil
	case <-ctx.Done():
		return State{Kind: kindRedis}, ctx.Err()
	}
}

// A probe still in flight at the next tick is not started again, and none
// outlives Run.
func TestProbeInFlightNotStartedTwice(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "cleanup.lock")
	testproc.WriteFile(t, pidfile, strconv.Itoa(os.Getpid()))
	c := decodeYAML(t, `
interval: 1h
locks:
  - {job: cleanup, pidfile: `+strconv.Quote(pidfile)+`}
  - {job: b, redis: "redis://127.0.0.1:1/0", key: "lock:b"}
`)
	src, err := New("locks", c, sources.Deps{Logger: discard(), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	gate := &gatedProbe{answer: make(chan struct{})}
	src.locks[1].net = gate
	snk, step, stop := runSource(t, src)
	testproc.WaitUntil(t, 30*time.Second, "the first probe", func() bool { return gate.started.Load() == 1 })
	// Three steps: the third is taken once Run has started the second
	// tick's probes.
	for range 3 {
		step.next <- struct{}{}
	}
	gate.answer <- struct{}{}
	snk.waitBatch(t, "the gated lock's answer", func(b batch) bool { return b.Locks[1].Held })
	// The third step's tick may come once the answer is in: it starts the
	// next probe, rightly. None ever ran beside another.
	if n, m := gate.started.Load(), gate.maxLive.Load(); n > 2 || m != 1 {
		t.Fatalf("%d probes started, at most %d at once, over three ticks with the first in flight; want at most 2, one at a time", n, m)
	}
	before := gate.started.Load()
	step.next <- struct{}{}
	testproc.WaitUntil(t, 30*time.Second, "the next tick's probe", func() bool { return gate.started.Load() > before || gate.live.Load() > 0 })

	// Stopped with a probe in flight: Run returns once the probe has.
	stop()
	if n := gate.live.Load(); n != 0 {
		t.Errorf("%d probes in flight after Run returned", n)
	}
}
