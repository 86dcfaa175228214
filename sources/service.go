package sources

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/config"
)

// Service is a source that receives rather than reads (the check-in
// receiver): opened the first time a configuration turns it on, it lives
// as long as jobwatch, what it has received and acknowledged surviving
// reloads. Each configuration that loads configures it, and the server
// hands it the HTTP path its type declares.
type Service interface {
	// Configure applies a configuration that loaded, one that has the
	// service off too: it returns the source that hands over what the
	// service receives, or nil while cfg has it off (it then refuses
	// what comes).
	Configure(cfg *config.Config) Source
	// ServeHTTP answers the service's path.
	ServeHTTP(http.ResponseWriter, *http.Request)
	// Close stops receiving; what was acknowledged is kept.
	Close() error
}

// RootClaimer is implemented by a service that may answer paths at the
// root too (check-ins at /<uuid> with checkins.root_paths): ClaimsRoot
// says whether a request of the root is its.
type RootClaimer interface {
	ClaimsRoot(r *http.Request) bool
}

// Proposer is implemented by a service that knows jobs the config file
// does not list (check-ins' ?create=1, a Sentry monitor_config): the
// status page shows them, to be added to the file.
type Proposer interface {
	Proposals() []Proposal
}

// Proposal is a job for the config file: Entry, a jobs: entry in YAML;
// Created says it is watched already (created from a check-in), else it
// is only proposed. Identifier is what its check-ins name it by, Origin
// where it came from.
type Proposal struct {
	Identifier, Origin, Entry string
	Created                   bool
}

// OutputReader is implemented by a service that keeps the outputs it
// receives (the check-in spool) and hands them over as references
// (model.Event.OutputRef, "<type>:..."): ReadOutput reads one, or says why
// it no longer can.
type OutputReader interface {
	ReadOutput(ref string) (string, error)
}

// ServiceDeps is what a service is opened with.
type ServiceDeps struct {
	Deps
	// StateDir is jobwatch's state directory, where a service keeps what
	// it has received (a directory of its own in it).
	StateDir string
	// Count adds one to the service's counter of that name (one of its
	// type's Counters) for the label value.
	Count func(counter, value string)
	// Reload loads the config again, for a service whose Jobs changed.
	Reload func() error
}

// ServiceType is a registered kind of service.
type ServiceType struct {
	// Type is its source's type and name ("checkin").
	Type string
	// Path is the URL path pattern the server hands it ("/ping/").
	Path string
	// MorePaths are further patterns it answers (other monitors' URL
	// shapes: "/api/", "/p/").
	MorePaths []string
	// LateWindow is its source's late window (RunReporter's).
	LateWindow time.Duration
	// Enabled says whether a configuration turns it on.
	Enabled func(*config.Config) bool
	// Open opens it, the first time a configuration turns it on.
	Open func(ServiceDeps) (Service, error)
	// Block is the config block that configures it ("checkins"), which
	// check-config's messages name.
	Block string
	// Check, when set, checks what a configuration that turns it on
	// needs besides its syntax (store: mysql's table), for check-config,
	// as a Checker does: an error wrapping ErrUnreachable says the server
	// could not be reached, a Warning is only one.
	Check func(ctx context.Context, cfg *config.Config) error
	// Off answers its path until then (with count, its counters').
	Off func(w http.ResponseWriter, r *http.Request, count func(counter, value string))
	// Counters are what it counts besides records (check-ins refused, by
	// reason); the exporter exports them as jobwatch_<Name>.
	Counters []Counter
	// Jobs, when set, are jobs the service made (check-ins' ?create=1),
	// kept in stateDir, as cfg configures them: the exporter watches them
	// with cfg's own.
	Jobs func(stateDir string, cfg *config.Config) []config.Job
}

// Counter is a service's counter, by one label whose values are bounded.
type Counter struct {
	Name, Help, Label string
	// Values are every value of the label, each series exported from the
	// start.
	Values []string
}

var (
	servicesMu sync.Mutex
	services   []ServiceType
)

// RegisterService makes a kind of service known, as Register does a type
// of source; its package calls it from its init function. A type
// registered twice panics.
func RegisterService(t ServiceType) {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	for _, s := range services {
		if s.Type == t.Type || s.Path == t.Path {
			panic(fmt.Sprintf("service %q registered twice, or its path %q", t.Type, t.Path))
		}
	}
	services = append(services, t)
}

// Services are the registered kinds of service, in the order registered.
func Services() []ServiceType {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	return append([]ServiceType(nil), services...)
}
