package checkin

import (
	"strings"

	"github.com/jobwatch/jobwatch/config"
)

// routes are what a configuration accepts check-ins under: every accepted
// job's name and aliases, and the keys of the other monitors' URLs.
type routes struct {
	// ids maps a job's name, and each of its aliases, to the job.
	ids map[string]string
	// hcKeys, sentryKeys and cronitorKeys are the keys of checkins.keys.
	hcKeys, sentryKeys, cronitorKeys map[string]bool
	// rootPaths serves Healthchecks' paths at the root too.
	rootPaths bool
}

// routesOf are the routes of the jobs accepted, with their aliases in
// jobs (nil: none), and c's keys.
func routesOf(accepted []string, jobs []config.Job, c Config) *routes {
	rt := &routes{ids: make(map[string]string, len(accepted)), rootPaths: c.RootPaths,
		hcKeys: set(c.Keys.Healthchecks), sentryKeys: set(c.Keys.Sentry), cronitorKeys: set(c.Keys.Cronitor)}
	aliases := map[string][]string{}
	for _, j := range jobs {
		aliases[j.Name] = j.Aliases
	}
	for _, name := range accepted {
		rt.ids[name] = name
		for _, a := range aliases[name] {
			rt.ids[a] = name
		}
	}
	return rt
}

func set(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// A ping is where a check-in's path says it goes, and what it says.
type ping struct {
	job  string
	verb string // "", start, fail, log, skip or an exit status
	// alias says the check-in came under another monitor's identifier
	// (an alias, or a ping key and slug): it is answered as that
	// monitor answers (Healthchecks' "OK", its Ping-Body-Limit).
	alias bool
	// slug, for /ping/<key>/<slug> of no job: the slug ?create=1 would
	// create a job of.
	slug string
}

// isVerb reports whether s can follow a check's identifier.
func isVerb(s string) bool {
	switch s {
	case "start", "fail", "log", "skip":
		return true
	}
	return s != "" && len(s) <= 3 && strings.Trim(s, "0123456789") == ""
}

// pingPath reads a path below /ping/ (or the root, with root_paths), rest
// being the path after it: /JOB, /JOB/VERB, /UUID[/VERB], /KEY/SLUG[/VERB],
// each with an optional trailing slash as Healthchecks allows. A refusal
// is nil when the path reads; the ping is set with one when the path is a
// ping key's and its slug names no job (for ?create=1).
func (rt *routes) pingPath(rest string) (ping, *refusal) {
	rest = strings.TrimSuffix(rest, "/")
	seg := strings.Split(rest, "/")
	if len(seg) > 3 || seg[0] == "" {
		return ping{}, badPath
	}
	if job, ok := rt.ids[seg[0]]; ok {
		if len(seg) == 3 {
			return ping{}, badPath
		}
		p := ping{job: job, alias: job != seg[0]}
		if len(seg) == 2 {
			p.verb = seg[1]
		}
		return p, nil
	}
	switch {
	case rt.hcKeys[seg[0]] && len(seg) > 1:
		return rt.keyed(seg)
	case len(seg) == 1 || len(seg) == 2 && isVerb(seg[1]):
		return ping{}, &refusal{404, RejectUnknownJob, "not found"}
	case len(rt.hcKeys) > 0:
		// Not a job's: a ping key, and not one of ours.
		return ping{}, &refusal{404, RejectWrongKey, "not found"}
	case len(seg) == 2:
		return ping{}, &refusal{404, RejectUnknownJob, "not found"}
	}
	return ping{}, badPath
}

var badPath = &refusal{404, RejectBadPath, "not a check-in URL: want /ping/JOB, /ping/JOB/{start,fail,log,skip,EXIT_CODE} or /ping/PING_KEY/SLUG[/...]"}

// keyed reads /KEY/SLUG[/VERB], KEY a Healthchecks ping key of
// checkins.keys and SLUG an alias or a job's name.
func (rt *routes) keyed(seg []string) (ping, *refusal) {
	p := ping{alias: true}
	if len(seg) == 3 {
		p.verb = seg[2]
	}
	slug := seg[1]
	if slug != strings.ToLower(slug) {
		return ping{}, &refusal{400, RejectBadPath, "invalid url format"}
	}
	job, ok := rt.ids[slug]
	if !ok {
		p.slug = slug
		return p, &refusal{404, RejectUnknownJob, "not found"}
	}
	p.job = job
	return p, nil
}

// rootPing says whether a path at the root is a Healthchecks ping, with
// root_paths: a known identifier, a UUID, or a configured ping key first.
func (rt *routes) rootPing(path string) bool {
	if !rt.rootPaths {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	_, known := rt.ids[first]
	return known || rt.hcKeys[first] || uuidRE().MatchString(first)
}
