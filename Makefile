# Conveniences around the go command; scripts/test.sh is what CI runs.
# A plain `go build` fills version, revision and date from the build
# information the go command records; these ldflags add the tag-based
# version, the branch, who built it and when.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)
BRANCH     ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
BUILD_USER ?= $(shell id -un 2>/dev/null)@$(shell hostname 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y%m%d-%H:%M:%S)
PKG        := github.com/prometheus/common/version
LDFLAGS    := -X $(PKG).Version=$(VERSION) \
              -X $(PKG).Revision=$(REVISION) \
              -X $(PKG).Branch=$(BRANCH) \
              -X $(PKG).BuildUser=$(BUILD_USER) \
              -X $(PKG).BuildDate=$(BUILD_DATE)

.PHONY: build example test e2e bench
# CGO_ENABLED=0: a static binary, which `jobwatch run` starts faster (README).
build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o jobwatch ./cmd/jobwatch

# The quick start: build, write the example run log relative to now, run
# jobwatch on the bundled jobwatch.yml (Ctrl-C stops it).
example: build
	go run ./examples/genlog
	./jobwatch

test:
	scripts/test.sh

# jobwatch, prometheus and alertmanager end to end (part of `make test` too).
e2e:
	go test -race -count=1 -run TestAlertsEndToEnd ./e2e/

bench:
	go test -run '^$$' -bench . -benchtime 3x ./collector/ ./sources/... ./schedule/
