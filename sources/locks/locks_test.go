package locks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"log/slog"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// sink records what the source hands over.
type sink struct {
	mu      sync.Mutex
	batches []batch
	health  []error // nil: up
}

// batch is a batch handed over, with its observations read back into lock
// states.
type batch struct {
	model.Batch
	Locks []State
}

func (s *sink) Apply(b model.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, batch{b, statesOf(b)})
}

func (s *sink) SetHealth(_ string, up bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if up {
		err = nil
	}
	s.health = append(s.health, err)
}

var _ sources.Sink = (*sink)(nil)

// waitBatch waits for a batch that cond accepts and returns the first one.
func (s *sink) waitBatch(t *testing.T, what string, cond func(batch) bool) batch {
	t.Helper()
	var b batch
	testproc.WaitUntil(t, 30*time.Second, what, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, sb := range s.batches {
			if cond(sb) {
				b = sb
				return true
			}
		}
		return false
	})
	return b
}

// lastHealth is the last health reported: nil for up.
func (s *sink) lastHealth() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.health) == 0 {
		return nil
	}
	return s.health[len(s.health)-1]
}

// stepper replaces the source's wait: each round waits for the test to
// allow the next one.
type stepper struct{ next chan struct{} }

func (st stepper) wait(ctx context.Context, _ time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-st.next:
		return true
	}
}

func decodeYAML(t *testing.T, text string) Config {
	t.Helper()
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSourceRounds(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "cleanup.lock")
	c := decodeYAML(t, `
interval: 1h
locks:
  - job: stats
    flock: `+filepath.Join(dir, "stats.lock")+`
  - job: cleanup
    pidfile: `+pidfile+`
  - job: broken
    pidfile: `+filepath.Join(dir, "broken.lock")+`
`)
	if errs := c.Validate(map[string]bool{"stats": true, "cleanup": true, "broken": true}); len(errs) > 0 {
		t.Fatal(errs)
	}
	src, err := New("locks", c, sources.Deps{Logger: discard(), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	// A lock whose probe fails (permission denied: which root, running the
	// tests, never meets).
	src.locks[2].file = failing{}
	step := stepper{next: make(chan struct{})}
	src.wait = step.wait
	var snk sink
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- src.Run(ctx, nil, &snk) }()

	b := snk.waitBatch(t, "the first batch", func(batch) bool { return true })
	if b.Source != "locks" || len(b.Locks) != 3 || b.Position != nil || len(b.Events) != 0 {
		t.Fatalf("first batch: %+v", b)
	}
	// Every lock probed before the first batch: none is shown unprobed.
	if b.Locks[0].Held || b.Locks[1].Held || b.Locks[2].ProbeErrors != 1 || b.Locks[0].Kind != kindFlock || b.Locks[1].Kind != kindPIDFile {
		t.Errorf("first round: %+v", b.Locks)
	}
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	step.next <- struct{}{}
	b = snk.waitBatch(t, "the second round's probes", func(b batch) bool { return b.Locks[1].Held && b.Locks[2].ProbeErrors == 2 })
	l := b.Locks[1]
	if l.Job != "cleanup" || l.Lock != pidfile || !l.Held || l.Alive != HolderAlive || l.Kind != kindPIDFile {
		t.Errorf("second round, pid file: %+v", l)
	}
	snk.mu.Lock()
	health := append([]error(nil), snk.health...)
	snk.mu.Unlock()
	if len(health) != 1 || health[0] == nil || !strings.Contains(health[0].Error(), `job "broken"`) {
		t.Errorf("health reports %v, want one down naming the lock", health)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type failing struct{}

func (failing) probe(time.Time) (State, error) {
	return State{Kind: kindPIDFile}, errors.New("permission denied")
}

func TestValidate(t *testing.T) {
	c := decodeYAML(t, `
interval: -1s
locks:
  - flock: /a
  - job: unknown
    flock: /b
  - job: a
    flock: /c
    pidfile: /d
  - job: a
    redis: redis://127.0.0.1:1/0
  - job: a
    mysql: "u@tcp(h:1)/"
    name: `+strings.Repeat("n", 65)+`
  - job: a
    pidfile: /e
    key: k
    stale_after: 1h
  - job: a
    flock: /f
  - job: a
    flock: /f
`)
	var got []string
	for _, err := range c.Validate(map[string]bool{"a": true}) {
		got = append(got, err.Error())
	}
	want := []string{
		"interval must not be negative",
		"locks[0]: job is required",
		`locks[1] (job "unknown"): job "unknown" is not configured`,
		`locks[2] (job "a"): exactly one of flock, pidfile, redis, mysql and mysql_dsn_file is required`,
		`locks[3] (job "a"): key is required with redis`,
		`locks[4] (job "a"): name "` + strings.Repeat("n", 65) + `" is longer than GET_LOCK's 64 characters`,
		`locks[5] (job "a"): key is not a field of a pidfile lock`,
		`locks[7] (job "a"): lock "/f" of job "a" is configured twice`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewHidesDSNSecrets(t *testing.T) {
	t.Setenv("JOBWATCH_TEST_PW", "hunter2")
	c := decodeYAML(t, `
locks:
  - job: a
    mysql: "u:${JOBWATCH_TEST_PW}@tcp(h:1)/?badparam=%zz"
    name: n
`)
	_, err := New("locks", c, sources.Deps{Logger: discard(), Now: time.Now})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	raw, _ := json.Marshal(err.Error())
	if strings.Contains(string(raw), "hunter2") {
		t.Fatal("secret in error")
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// statesOf reads a batch's observations back into lock states, as far as
// they say them.
func statesOf(b model.Batch) []State {
	var out []State
	for _, o := range b.Observations {
		st := State{Job: o.Job, Lock: o.Key}
		for _, f := range o.Fields {
			switch f.Name {
			case "kind":
				st.Kind = f.Value.(string)
			case "held":
				st.Held = f.Value.(bool)
			case "holder":
				st.Holder = f.Value.(string)
			case "holder_alive":
				switch f.Value {
				case true:
					st.Alive = HolderAlive
				case false:
					st.Alive = HolderDead
				}
			}
		}
		for _, s := range o.Samples {
			if s.Metric == "lock_probe_errors_total" {
				st.ProbeErrors = uint64(s.Value)
			}
		}
		out = append(out, st)
	}
	return out
}
