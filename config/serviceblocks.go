package config

import (
	"fmt"
	"slices"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ServiceBlock is a top-level block of the config file that a service owns
// (checkins:), handed to the decoder its package registered, as a source's
// block is handed to its type's.
type ServiceBlock struct {
	Key string
	// Node is the block as written; nil when the file has none, and the
	// decoder then returns the service's defaults (off).
	Node *yaml.Node
	// Config is the config decoded so far: its jobs and its sources, for a
	// block that names them, and its Path to resolve the block's paths.
	Config *Config
}

// ServiceBlockDecoder decodes and validates a service's block, reporting
// every problem at once; the caller prefixes them with the block's key.
type ServiceBlockDecoder func(ServiceBlock) (any, []error)

var (
	blocksMu sync.RWMutex
	blocks   = map[string]ServiceBlockDecoder{}
)

// RegisterServiceBlock makes a top-level block known; the package of the
// service it configures calls it from its init function. A key registered
// twice panics.
func RegisterServiceBlock(key string, d ServiceBlockDecoder) {
	blocksMu.Lock()
	defer blocksMu.Unlock()
	if _, dup := blocks[key]; dup {
		panic(fmt.Sprintf("config: block %q registered twice", key))
	}
	blocks[key] = d
}

// serviceBlockKeys are the registered blocks' keys, sorted.
func serviceBlockKeys() []string {
	blocksMu.RLock()
	defer blocksMu.RUnlock()
	keys := make([]string, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func lookupServiceBlock(key string) ServiceBlockDecoder {
	blocksMu.RLock()
	defer blocksMu.RUnlock()
	return blocks[key]
}

// decodeServiceBlocks hands each registered block of doc (the file's top
// mapping) to its decoder, after the jobs and sources are decoded.
func (c *Config) decodeServiceBlocks(doc *yaml.Node) []error {
	top, _ := dealias(doc, 0)
	var errs []error
	c.services = map[string]any{}
	for _, key := range serviceBlockKeys() {
		b := ServiceBlock{Key: key, Node: topValue(top, key), Config: c}
		v, e := lookupServiceBlock(key)(b)
		errs = append(errs, Prefix(key, e)...)
		c.services[key] = v
	}
	return errs
}

// topValue is the value of key in the mapping n, or nil.
func topValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Service is the decoded block key of a service's package registered
// (nil when none is registered under key): that package's to read.
func (c *Config) Service(key string) any { return c.services[key] }

// SetService replaces the decoded block key: for tests, and for a
// service that builds a config of its own.
func (c *Config) SetService(key string, v any) {
	if c.services == nil {
		c.services = map[string]any{}
	}
	c.services[key] = v
}
