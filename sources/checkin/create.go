package checkin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/jobname"
)

// Create is checkins.create: the jobs Healthchecks' ?create=1 may make,
// as its auto-provisioning does, and how they are scheduled.
type Create struct {
	// Match is a regular expression a slug must match to be created.
	Match    string          `yaml:"match"`
	Every    config.Duration `yaml:"every"`
	Schedule string          `yaml:"schedule"`
	Grace    config.Duration `yaml:"grace"`
	// Max bounds the jobs created (default DefaultCreateMax).
	Max int `yaml:"max"`
}

// Bounds of checkins.create.max.
const (
	DefaultCreateMax = 20
	maxCreateMax     = 1000
)

// enabled says whether c lets ?create=1 create jobs.
func (c *Create) enabled() bool { return c.Match != "" }

func (c *Create) validate() []error {
	if !c.enabled() {
		if c.Every != 0 || c.Schedule != "" || c.Grace != 0 || c.Max != 0 {
			return []error{errors.New("create: needs match, the slugs it may create")}
		}
		return nil
	}
	var errs []error
	if _, err := regexp.Compile(c.Match); err != nil {
		errs = append(errs, fmt.Errorf("create.match: %w", err))
	}
	if c.Max == 0 {
		c.Max = DefaultCreateMax
	}
	if c.Max < 0 || c.Max > maxCreateMax {
		errs = append(errs, fmt.Errorf("create.max must be between 1 and %d, got %d", maxCreateMax, c.Max))
	}
	j := c.job("x", "x")
	if (c.Every == 0) == (c.Schedule == "") {
		errs = append(errs, errors.New("create needs exactly one of every and schedule"))
	} else {
		for _, err := range j.ScheduleSpec().Check() {
			errs = append(errs, fmt.Errorf("create: %w", err))
		}
	}
	if c.Grace < 0 || c.Every < 0 {
		errs = append(errs, errors.New("create: every and grace must not be negative"))
	}
	return errs
}

// job is the job c creates of slug, named name.
func (c *Create) job(name, slug string) config.Job {
	return config.Job{Name: name, Every: c.Every, Schedule: c.Schedule, Grace: c.Grace, Aliases: []string{slug}}
}

// createdName is the name of the job created of slug: the slug, unless it
// is no job name (a UUID, a slug that starts with a digit).
func createdName(slug string) string {
	if jobname.Valid(slug) {
		return slug
	}
	return "hc_" + slug
}

// createdFile is where the jobs created are kept, in the spool directory:
// a file of its own, versioned, written whole and renamed into place.
const createdFile = "created.json"

// createdVersion is the version of createdFile's format.
const createdVersion = 1

type createdState struct {
	V    int          `json:"v"`
	Jobs []createdJob `json:"jobs"`
}

// createdJob is a job ?create=1 made: its slug and when.
type createdJob struct {
	Slug    string    `json:"slug"`
	Created time.Time `json:"created"`
}

// created are the jobs ?create=1 made, as kept in dir.
type created struct {
	mu   sync.Mutex
	dir  string
	jobs []createdJob
}

// readCreated reads the jobs created kept in dir.
func readCreated(dir string) ([]createdJob, error) {
	data, err := os.ReadFile(filepath.Join(dir, createdFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check-in jobs created: %w", err)
	}
	var st createdState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("check-in jobs created, %s: %w", createdFile, err)
	}
	if st.V != createdVersion {
		return nil, fmt.Errorf("check-in jobs created, %s: version %d, this jobwatch reads %d", createdFile, st.V, createdVersion)
	}
	return st.Jobs, nil
}

// snapshot are the jobs created.
func (c *created) snapshot() []createdJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.jobs)
}

// add keeps slug as created at now, unless max are; it reports whether
// slug is created now or was already.
func (c *created) add(slug string, now time.Time, max int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.ContainsFunc(c.jobs, func(j createdJob) bool { return j.Slug == slug }) {
		return true, nil
	}
	if len(c.jobs) >= max {
		return false, nil
	}
	jobs := append(slices.Clip(c.jobs), createdJob{Slug: slug, Created: now.UTC()})
	if err := writeCreated(c.dir, jobs); err != nil {
		return false, err
	}
	c.jobs = jobs
	return true, nil
}

// writeCreated writes jobs to dir's createdFile, synced before the rename
// and the rename synced, so that a job created is kept across a crash.
func writeCreated(dir string, jobs []createdJob) error {
	data, err := json.MarshalIndent(createdState{V: createdVersion, Jobs: jobs}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, createdFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("check-in jobs created: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, createdFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("check-in jobs created: %w", err)
	}
	return nil
}

// createRule is checkins.create as a configuration turns it on.
type createRule struct {
	Create
	re *regexp.Regexp
}

// ruleOf is c's rule, nil when c creates nothing.
func ruleOf(c Create) *createRule {
	if !c.enabled() {
		return nil
	}
	re, err := regexp.Compile(c.Match)
	if err != nil {
		return nil // validated: not reached
	}
	return &createRule{c, re}
}

// createdJobs are the jobs created kept in stateDir's spool, configured
// by cfg's checkins.create: sources.ServiceType's Jobs. A created job the
// file now has (by name or alias) is the file's.
func createdJobs(stateDir string, cfg *config.Config) []config.Job {
	jobs, err := readCreated(filepath.Join(stateDir, "checkins"))
	if err != nil {
		return nil // the receiver, which reads it too, fails to open
	}
	return jobsOf(jobs, cfg)
}

// jobsOf are the jobs created as cfg configures them, but for those its
// jobs have. cfg may hold the created jobs already (the exporter adds
// them to the config it runs): a job exactly as created is not the file's.
func jobsOf(jobs []createdJob, cfg *config.Config) []config.Job {
	c := ConfigOf(cfg)
	if !c.Create.enabled() {
		return nil
	}
	made := map[string]bool{}
	for _, j := range jobs {
		made[createdName(j.Slug)+"\x00"+j.Slug] = true
	}
	var own []config.Job
	for _, j := range cfg.Jobs {
		if len(j.Aliases) == 1 && made[j.Name+"\x00"+j.Aliases[0]] && reflect.DeepEqual(j, c.Create.job(j.Name, j.Aliases[0])) {
			continue
		}
		own = append(own, j)
	}
	ids := identifiers(own)
	var out []config.Job
	for _, j := range jobs {
		name := createdName(j.Slug)
		if !config.ValidAlias(j.Slug) || ids[j.Slug] || ids[name] {
			continue
		}
		ids[name], ids[j.Slug] = true, true
		out = append(out, c.Create.job(name, j.Slug))
	}
	return out
}

// create answers ?create=1 of slug under a ping key, which names no job:
// a slug checkins.create.match allows is created, as a job of the state,
// until checkins.create.max are; it reports whether the job now is.
func (s *Receiver) create(w http.ResponseWriter, slug string) bool {
	c := s.createRule.Load()
	if c == nil || !c.re.MatchString(slug) {
		s.refuse(w, &refusal{http.StatusNotFound, RejectCreateRefused, "not found"})
		return false
	}
	ok, err := s.created.add(slug, s.opts.Now(), c.Max)
	if err != nil {
		s.opts.Logger.Error("check-in job not created", "slug", slug, "err", err)
		acknowledge(w, false)
		return false
	}
	if !ok {
		s.opts.Logger.Warn("check-in job not created: checkins.create.max reached", "slug", slug, "max", c.Max)
		s.refuse(w, &refusal{http.StatusForbidden, RejectCreateRefused, "checkins.create.max reached"})
		return false
	}
	if s.opts.Reload == nil {
		return true
	}
	if err := s.opts.Reload(); err != nil {
		s.opts.Logger.Error("check-in job created, not yet watched: the config did not load", "slug", slug, "err", err)
		acknowledge(w, false)
		return false
	}
	job := c.job(createdName(slug), slug)
	s.opts.Logger.Info("check-in job created; add it to jobwatch.yml to keep it configured", "slug", slug,
		"job", fmt.Sprintf("- name: %s\n  %s\n  aliases: [%s]\n", job.Name, scheduleLine(job), slug))
	return true
}

func scheduleLine(j config.Job) string {
	s := "every: " + j.Every.String()
	if j.Schedule != "" {
		s = fmt.Sprintf("schedule: %q", j.Schedule)
	}
	if j.Grace > 0 {
		s += "\n  grace: " + j.Grace.String()
	}
	return s
}
