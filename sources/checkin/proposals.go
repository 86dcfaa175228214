package checkin

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jobwatch/jobwatch/sources"
)

// maxProposed bounds the Sentry monitors proposed as jobs that are kept:
// monitor slugs come from requests.
const maxProposed = 100

// proposed are the jobs Sentry check-ins' monitor_configs described, by
// monitor slug, the newest maxProposed.
type proposed struct {
	mu    sync.Mutex
	entry map[string]string
	order []string
}

func (p *proposed) add(slug, entry string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.entry == nil {
		p.entry = map[string]string{}
	}
	if _, ok := p.entry[slug]; !ok {
		if len(p.order) == maxProposed {
			delete(p.entry, p.order[0])
			p.order = p.order[1:]
		}
		p.order = append(p.order, slug)
	}
	p.entry[slug] = entry
}

var _ sources.Proposer = (*Receiver)(nil)

// Proposals are the jobs ?create=1 created (watched) and those Sentry
// monitor_configs proposed (not watched) that no job of the config has,
// each with its jobs: entry for the file, sorted by identifier.
func (r *Receiver) Proposals() []sources.Proposal {
	var out []sources.Proposal
	if made := r.madeJobs.Load(); made != nil {
		for _, j := range *made {
			out = append(out, sources.Proposal{Identifier: j.Aliases[0], Origin: "Healthchecks ?create=1", Created: true,
				Entry: fmt.Sprintf("- name: %s\n  %s\n  aliases: [%s]\n", j.Name, scheduleLine(j), j.Aliases[0])})
		}
	}
	rt := r.routes.Load()
	r.proposed.mu.Lock()
	for _, slug := range r.proposed.order {
		if _, known := rt.ids[slug]; !known {
			out = append(out, sources.Proposal{Identifier: slug, Origin: "Sentry monitor_config", Entry: r.proposed.entry[slug]})
		}
	}
	r.proposed.mu.Unlock()
	slices.SortFunc(out, func(a, b sources.Proposal) int { return strings.Compare(a.Identifier, b.Identifier) })
	return out
}
