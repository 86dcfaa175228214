# Conveniences around the go command; scripts/test.sh is what CI runs.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/prometheus/common/version.Version=$(VERSION) \
            -X github.com/prometheus/common/version.Revision=$(REVISION) \
            -X github.com/prometheus/common/version.Branch=main

.PHONY: build test e2e bench
build:
	go build -trimpath -ldflags "$(LDFLAGS)" -o jobwatch ./cmd/jobwatch

test:
	scripts/test.sh

# jobwatch, prometheus and alertmanager end to end (part of `make test` too).
e2e:
	go test -race -count=1 -run TestAlertsEndToEnd ./e2e/

bench:
	go test -run '^$$' -bench . -benchtime 3x ./collector/ ./sources/... ./schedule/
