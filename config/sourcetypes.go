package config

import (
	"fmt"
	"slices"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Block is one entry of the config file's sources list, handed to the
// decoder of its type.
type Block struct {
	Name, Type string
	// Node is the entry's whole mapping, name and type included.
	Node *yaml.Node
	// Resolve makes a path of the block absolute against the config file's
	// directory; it leaves absolute and empty paths alone (and every path,
	// for a config read by Parse rather than Load).
	Resolve func(path string) string
	// Jobs are the configured job names, for blocks that map to jobs.
	Jobs map[string]bool
}

// SourceConfig is a source's decoded and validated block. Package sources
// extends it with the constructor; config needs only the identity.
type SourceConfig interface {
	// Identity names what the source reads (its file, table or journal),
	// so that its saved position follows it when it is renamed, or removed
	// and configured again. It must not hold a secret.
	Identity() string
}

// BlockDecoder decodes and validates a block of its type, reporting every
// problem at once, each with its line when it has one; the caller names
// the source.
type BlockDecoder func(Block) (SourceConfig, []error)

// The types of source, registered by sources.Register from the init
// function of each source's package. They are kept here because config
// decodes the blocks; package sources is the one to call.
var (
	typesMu sync.RWMutex
	types   = map[string]BlockDecoder{}
)

// RegisterSourceType makes a type of source known. Use sources.Register.
func RegisterSourceType(typ string, d BlockDecoder) {
	typesMu.Lock()
	defer typesMu.Unlock()
	if _, dup := types[typ]; dup {
		panic(fmt.Sprintf("config: source type %q registered twice", typ))
	}
	types[typ] = d
}

func lookupSourceType(typ string) (BlockDecoder, bool) {
	typesMu.RLock()
	defer typesMu.RUnlock()
	d, ok := types[typ]
	return d, ok
}

// SourceTypes lists the registered types of source, sorted.
func SourceTypes() []string {
	typesMu.RLock()
	defer typesMu.RUnlock()
	t := make([]string, 0, len(types))
	for k := range types {
		t = append(t, k)
	}
	slices.Sort(t)
	return t
}
