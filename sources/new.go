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
		return nonNil(NewRunLog(src, deps))
	case config.TypeMySQL:
		return nonNil(NewMySQL(src, deps))
	case config.TypeJournal:
		return nonNil(NewJournal(src, deps))
	}
	return nil, fmt.Errorf("unknown source type %q", src.Type)
}

// nonNil keeps a failed constructor's typed nil pointer out of the Source
// interface.
func nonNil[S Source](s S, err error) (Source, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
