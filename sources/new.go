package sources

import (
	"fmt"

	"jobwatch/config"
)

// New builds the source a config describes.
func New(src config.Source, deps Deps) (Source, error) {
	deps = deps.withDefaults()
	switch src.Type {
	case config.TypeRunLog:
		return NewRunLog(src, deps)
	}
	return nil, fmt.Errorf("unknown source type %q", src.Type)
}
