package config

import (
	"fmt"
	"regexp"
	"sync"

	"go.yaml.in/yaml/v3"
)

// AliasPattern is what an alias may look like: a slug as Healthchecks
// defines it, which a lowercase UUID (a Healthchecks check's), a Sentry
// monitor slug and a Cronitor monitor key all are.
const AliasPattern = `^[a-z0-9_-]+$`

// maxAlias bounds an alias: Healthchecks' slugs are at most 100 bytes.
const maxAlias = 128

var aliasRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(AliasPattern) })

// ValidAlias reports whether s may be an alias.
func ValidAlias(s string) bool { return len(s) <= maxAlias && aliasRE().MatchString(s) }

// checkAliases checks every job's aliases, and that each names one job
// only: an alias is another job's alias or name is a clash, reported
// naming both jobs. nodes are the jobs as written, for lines.
func checkAliases(jobs []Job, nodes []yaml.Node) []error {
	type owner struct {
		job  string
		line int
	}
	owners := map[string]owner{}
	for i, j := range jobs {
		if j.Name != "" {
			owners[j.Name] = owner{j.Name, nodes[i].Line}
		}
	}
	var errs []error
	for i, j := range jobs {
		where := fmt.Sprintf("job %q", j.Name)
		if j.Name == "" {
			where = fmt.Sprintf("jobs[%d]", i)
		}
		for _, a := range j.Aliases {
			switch o, taken := owners[a]; {
			case !ValidAlias(a):
				errs = append(errs, fmt.Errorf("%s: alias %q must match %s (a lowercase UUID or slug, at most %d bytes)", where, a, AliasPattern, maxAlias))
			case taken && o.job == j.Name:
				errs = append(errs, fmt.Errorf("%s: alias %q is the job's name or given twice", where, a))
			case taken:
				errs = append(errs, fmt.Errorf("%s: alias %q is also job %q's (line %d): an alias names one job", where, a, o.job, o.line))
			default:
				owners[a] = owner{j.Name, nodes[i].Line}
			}
		}
	}
	return errs
}
