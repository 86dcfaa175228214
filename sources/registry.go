package sources

import (
	"fmt"

	"github.com/jobwatch/jobwatch/config"
)

// Config is a source's decoded and validated config block: what it reads,
// and how to build it.
type Config interface {
	config.SourceConfig
	// New builds the source named name; it does not start reading.
	New(name string, deps Deps) (Source, error)
}

// Decoder decodes and validates a block of its type (with config.DecodeBlock,
// which rejects unknown keys), reporting every problem at once, each with
// its line when it has one; the caller names the source.
type Decoder func(config.Block) (Config, []error)

// Register makes a type of source known to the config file. Each source
// package calls it from its init function; registering a type twice
// panics.
func Register(typ string, d Decoder) {
	config.RegisterSourceType(typ, func(b config.Block) (config.SourceConfig, []error) {
		c, errs := d(b)
		if c == nil {
			return nil, errs // no typed nil in the interface
		}
		return c, errs
	})
}

// New builds the source a config entry describes.
func New(src config.Source, deps Deps) (Source, error) {
	c, ok := src.Config.(Config)
	if !ok {
		return nil, fmt.Errorf("source %q: type %q has no decoded config", src.Name, src.Type)
	}
	s, err := c.New(src.Name, deps.WithDefaults())
	if err != nil {
		return nil, err
	}
	return s, nil
}
