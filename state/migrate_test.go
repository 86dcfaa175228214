package state_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/collector"
	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/exporter"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/state"
)

// nowDependent are the series whose value depends on the clock at scrape
// time, not only on the state.
var nowDependent = []string{
	"jobwatch_job_seconds_since_last_success", "jobwatch_job_stale{", "jobwatch_job_next_run_timestamp_seconds",
	"jobwatch_job_period_seconds", "jobwatch_source_decisions_behind_seconds",
}

// render is the collector's text exposition of the model's saved view,
// without the series that depend on the clock.
func render(t *testing.T, saved *model.Saved) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	// The classic buckets, which the fixture's jobwatch showed and the
	// state keeps.
	reg.MustRegister(collector.New(saved, time.Now, collector.Options{ClassicBuckets: true}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		enc.Encode(mf)
	}
	return filterSeries(b.String())
}

// absentAtZero are the series the collector leaves out while they are 0
// (docs/metrics.md): the fixture's jobwatch showed them at 0.
var absentAtZero = regexp.MustCompile(`^jobwatch_job_(runs_total\{.*result="(timeout|lost|too_short|unknown)"|(skips_total|lock_lost_total|duplicate_runs_total|overlaps_total|missed_runs_total|unexpected_runs_total|consecutive_missed_runs)\{).* 0\n$`)

func filterSeries(text string) string {
	var out []string
lines:
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, "jobwatch_job_") && !strings.HasPrefix(line, "jobwatch_source_") || absentAtZero.MatchString(line) {
			continue
		}
		for _, p := range nowDependent {
			if strings.HasPrefix(line, p) {
				continue lines
			}
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return strings.Join(out, "")
}

// upgradeExposition rewrites what the fixture's jobwatch showed into what
// the same state shows since: skips counted by reason (those counted before
// reasons were are "other"), the lost shared locks of every job (none), the
// consecutive missed runs and the runs too short (none: not counted
// before), each source's late records (none), and times in whole seconds.
func upgradeExposition(text string) string {
	var out strings.Builder
	for line := range strings.Lines(text) {
		line = wholeSeconds(line)
		if rest, ok := strings.CutPrefix(line, `jobwatch_source_records_total{source="`); ok {
			src, _, _ := strings.Cut(rest, `"`)
			fmt.Fprintf(&out, "jobwatch_source_late_records_total{source=%q} 0\n", src)
		}
		if rest, ok := strings.CutPrefix(line, `jobwatch_job_runs_total{job_name="`); ok && strings.Contains(rest, `result="lost"`) {
			job, _, _ := strings.Cut(rest, `"`)
			fmt.Fprintf(&out, "jobwatch_job_runs_total{job_name=%q,result=\"too_short\"} 0\n", job)
			fmt.Fprintf(&out, "jobwatch_job_runs_total{job_name=%q,result=\"unknown\"} 0\n", job)
		}
		if rest, ok := strings.CutPrefix(line, `jobwatch_job_consecutive_skips{job_name="`); ok {
			job, _, _ := strings.Cut(rest, `"`)
			fmt.Fprintf(&out, "jobwatch_job_consecutive_missed_runs{job_name=%q} 0\n", job)
		}
		rest, ok := strings.CutPrefix(line, `jobwatch_job_skips_total{job_name="`)
		if !ok {
			out.WriteString(line)
			continue
		}
		job, value, _ := strings.Cut(rest, `"} `)
		for _, r := range model.SkipReasons {
			v := "0\n"
			if r == model.SkipOther {
				v = value
			}
			fmt.Fprintf(&out, "jobwatch_job_skips_total{job_name=%q,reason=%q} %s", job, r, v)
		}
		for _, l := range model.LockLayers {
			fmt.Fprintf(&out, "jobwatch_job_lock_lost_total{job_name=%q,lock=%q} 0\n", job, l)
		}
	}
	return out.String()
}

// wholeSeconds rewrites a line of a time the fixture's jobwatch wrote with
// its fraction as jobwatch writes it since (docs/metrics.md, "Times"): a
// time due (a deadline, a next run) at the first whole second not before
// it, one past at its second.
func wholeSeconds(line string) string {
	name, _, _ := strings.Cut(line, "{")
	if !strings.HasSuffix(name, "_timestamp_seconds") {
		return line
	}
	sp := strings.LastIndexByte(line, ' ')
	v, err := strconv.ParseFloat(strings.TrimSpace(line[sp+1:]), 64)
	if err != nil {
		return line
	}
	round := math.Floor
	if strings.HasSuffix(name, "_deadline_timestamp_seconds") || strings.HasSuffix(name, "_next_run_timestamp_seconds") {
		round = math.Ceil
	}
	return line[:sp+1] + strconv.FormatFloat(round(v), 'g', -1, 64) + "\n"
}

// fixtureTracker is the model configured as the fixture's jobwatch was.
func fixtureTracker(t *testing.T) *model.Tracker {
	t.Helper()
	cfg, err := config.Load("testdata/v1/jobwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := exporter.JobSpecs(cfg, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "fixture-host"})
	// The sources as the fixture's jobwatch named them: the state follows
	// what they read (testdata/v1/make.sh ran in /tmp/jobwatch-v1-fixture).
	tr.Configure(jobs, []model.SourceSpec{
		{Name: "a", Type: "runlog", Identity: "runlog:/tmp/jobwatch-v1-fixture/a.log"},
		{Name: "b", Type: "runlog", Identity: "runlog:/tmp/jobwatch-v1-fixture/b.log"},
	})
	tr.SetHealth("a", true, nil)
	tr.SetHealth("b", true, nil)
	return tr
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// A state directory written by jobwatch before format 2 (format 1, one
// state.json: testdata/v1, made by testdata/v1/make.sh with that jobwatch)
// loads into the very state that jobwatch showed, is written in format 2 by
// the first save, and loads the same from there.
func TestFormat1Migrates(t *testing.T) {
	want, err := os.ReadFile("testdata/v1/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	copyDir(t, "testdata/v1/data", dir)

	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	tr := fixtureTracker(t)
	if err := tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Retired) != 1 || snap.Retired["old"] == nil || snap.Retired["old"].Records != 2 {
		t.Errorf("the retired source is not kept: %+v", snap.Retired)
	}
	c := tr.Changes()
	saved := (*model.Saved)(nil).With(c)
	if got, want := render(t, saved), filterSeries(upgradeExposition(string(want))); got != want {
		t.Fatalf("format 1 loads into other metrics than that jobwatch showed:\n got:\n%s\nwant:\n%s", got, want)
	}

	// The first save writes format 2 and removes state.json.
	if err := st.Save(c, nil, saved); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, state.LegacyFile)); !os.IsNotExist(err) {
		t.Errorf("state.json is still there after the first save: %v", err)
	}
	st2, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	snap2, err := st2.Load()
	if err != nil {
		t.Fatal(err)
	}
	tr2 := fixtureTracker(t)
	if err := tr2.Restore(snap2); err != nil {
		t.Fatal(err)
	}
	if got, want := render(t, (*model.Saved)(nil).With(tr2.Changes())), filterSeries(upgradeExposition(string(want))); got != want {
		t.Fatalf("format 2 written from format 1 loads into other metrics:\n got:\n%s\nwant:\n%s", got, want)
	}
	if snap2.Retired["old"] == nil || snap2.Retired["old"].Identity != "runlog:/tmp/jobwatch-v1-fixture/old.log" {
		t.Errorf("the retired source is lost in format 2: %+v", snap2.Retired)
	}
}
