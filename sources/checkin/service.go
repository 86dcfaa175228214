package checkin

import (
	"context"
	"net/http"
	"path/filepath"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
)

// The service's counters: check-ins refused, and check-ins not stored.
const (
	rejected = "checkins_rejected_total"
	notSaved = "checkins_not_saved_total"
)

func init() {
	sources.RegisterService(sources.ServiceType{
		Type:       Type,
		Path:       "/ping/",
		MorePaths:  []string{sentryPrefix, cronitorPrefix},
		LateWindow: LateWindow,
		Enabled:    func(c *config.Config) bool { return ConfigOf(c).Enabled },
		Open:       open,
		Block:      "checkins",
		Check: func(ctx context.Context, c *config.Config) error {
			if ConfigOf(c).Store != StoreMySQL {
				return nil
			}
			return checkStore(ctx, ConfigOf(c))
		},
		Off: func(w http.ResponseWriter, _ *http.Request, count func(counter, value string)) {
			count(rejected, RejectUnknownJob)
			http.Error(w, "check-ins are not enabled (checkins: in jobwatch.yml)", http.StatusNotFound)
		},
		Jobs: createdJobs,
		Counters: []sources.Counter{
			{Name: rejected, Help: "Check-ins refused, by reason (docs/checkins.md).", Label: "reason", Values: RejectReasons},
			{Name: notSaved, Help: "Check-ins answered 503 because their store (the spool's disk, store: mysql's database) could not keep them, by store (docs/checkins.md).",
				Label: "store", Values: []string{StoreSpool, StoreMySQL}},
		},
	})
}

// open opens the receiver, its spool in the state directory.
func open(d sources.ServiceDeps) (sources.Service, error) {
	r, err := OpenReceiver(Options{
		Dir:        filepath.Join(d.StateDir, "checkins"),
		Now:        d.Now,
		Logger:     d.Logger.With("source", Type),
		OnReject:   func(reason string) { d.Count(rejected, reason) },
		OnNotSaved: func(store string) { d.Count(notSaved, store) },
		Reload:     d.Reload,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

var (
	_ sources.Service     = (*Receiver)(nil)
	_ sources.RootClaimer = (*Receiver)(nil)
)

// ClaimsRoot says whether r, of the root, is a Healthchecks ping the
// config's root_paths has this receiver answer.
func (r *Receiver) ClaimsRoot(req *http.Request) bool { return r.routes.Load().rootPing(req.URL.Path) }

// Configure sets the jobs a configuration accepts check-ins of (none while
// it has check-ins off) and its body limit.
func (r *Receiver) Configure(cfg *config.Config) sources.Source {
	c := ConfigOf(cfg)
	if !c.Enabled {
		r.SetJobs(nil)
		return nil
	}
	r.SetMaxBody(int64(c.MaxBody))
	r.useStore(c)
	r.createRule.Store(ruleOf(c.Create))
	made := jobsOf(r.created.snapshot(), cfg)
	r.madeJobs.Store(&made)
	accepted := c.Accepted(cfg.Jobs)
	if len(c.Jobs) > 0 {
		// An allow-list names the file's jobs; those created are accepted.
		for _, j := range made {
			accepted = append(accepted, j.Name)
		}
	}
	r.SetRoutes(accepted, cfg.Jobs, c)
	// With store: mysql the spool takes no more check-ins, and its source
	// only applies what it acknowledged before: the table's rows are
	// applied by the mysql source that reads them back.
	return r.Source()
}

// useStore opens the table store: mysql names, or closes the one a
// previous config named. A store that cannot be opened (a DSN file
// unreadable) is logged, and check-ins are answered 503 until a reload
// fixes it: they are never put in the spool instead, which the other
// replicas do not read.
func (r *Receiver) useStore(c Config) {
	r.tableMu.Lock()
	defer r.tableMu.Unlock()
	old := r.table.Load()
	if c.Store != StoreMySQL {
		r.storeErr.Store(nil)
		if old != nil {
			r.table.Store(nil)
			_ = old.Close()
		}
		return
	}
	if old != nil && old.key == storeKey(c.MySQLDSN, c.MySQLDSNFile, c.Table) {
		return
	}
	t, err := openTableStore(c.MySQLDSN, c.MySQLDSNFile, c.Table, r.opts.Logger)
	if err != nil {
		r.opts.Logger.Error("check-in store not opened: check-ins are refused", "err", err)
		r.storeErr.Store(&err)
	} else {
		r.storeErr.Store(nil)
	}
	r.table.Store(t)
	if old != nil {
		_ = old.Close()
	}
}
