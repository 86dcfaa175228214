# Conveniences around the go command; scripts/test.sh is what CI runs.
# A plain `go build` fills version, revision and date from the build
# information the go command records; these ldflags add the tag-based
# version, the branch, who built it and when. The version is one everywhere:
# the git tag (`git describe --tags --always --dirty`) in Debian's and RPM's
# spelling (packaging/debversion.sh: v0.1.0 is 0.1.0, v0.1.0-rc.1 is
# 0.1.0~rc.1, an untagged tree 0.0.0~gitabc1234), which `jobwatch --version`,
# jobwatch_build_info, the archives' and the packages' names and
# `dpkg-query -W jobwatch` all show; the build date is the commit's, not the
# clock's, so that a commit builds the same binary twice.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PKG_VERSION ?= $(shell packaging/debversion.sh $(VERSION))
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)
BRANCH     ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
BUILD_USER ?= $(shell id -un 2>/dev/null)@$(shell hostname 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE ?= $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y%m%d-%H:%M:%S)
PKG        := github.com/prometheus/common/version
LDFLAGS    := -X $(PKG).Version=$(PKG_VERSION) \
              -X $(PKG).Revision=$(REVISION) \
              -X $(PKG).Branch=$(BRANCH) \
              -X $(PKG).BuildUser=$(BUILD_USER) \
              -X $(PKG).BuildDate=$(BUILD_DATE)

# Release builds (make release, deb, rpm) hold only what the commit decides:
# stripped (-s -w), no build id, no paths (-trimpath), no VCS stamp, the
# branch as a checkout of the tag names it (HEAD) and a fixed build user, so
# that anyone building the tag gets the same bytes (docs/install.md).
DIST       ?= dist
RELEASE_ARCHES ?= amd64 arm64
RELEASE_USER ?= release@reproducible
RELEASE_LDFLAGS := -s -w -buildid= \
              -X $(PKG).Version=$(PKG_VERSION) \
              -X $(PKG).Revision=$(REVISION) \
              -X $(PKG).Branch=HEAD \
              -X $(PKG).BuildUser=$(RELEASE_USER) \
              -X $(PKG).BuildDate=$(BUILD_DATE)
DEB_ARCH   ?= amd64
RPM_ARCH   := $(if $(filter amd64,$(DEB_ARCH)),x86_64,$(if $(filter arm64,$(DEB_ARCH)),aarch64,$(DEB_ARCH)))
MAINTAINER ?= jobwatch maintainers <jobwatch@users.noreply.github.com>
NFPM_ENV    = PKG_VERSION='$(PKG_VERSION)' ARCH='$(DEB_ARCH)' BUILD='$(DIST)/build' \
              MAINTAINER='$(MAINTAINER)' SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)'
# Release and lint tools live in a module of their own (tools/go.mod), so
# that their dependencies stay out of the product's module graph.
TOOL        = go tool -modfile=tools/go.mod

.PHONY: build example test e2e bench release deb rpm clean FORCE
# CGO_ENABLED=0: static binaries, which start faster (README). jobwatch-run
# is the run wrapper alone, for cron jobs (docs/run.md).
build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o jobwatch ./cmd/jobwatch
	CGO_ENABLED=0 go build -trimpath -o jobwatch-run ./cmd/jobwatch-run

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

# Static, stripped, reproducible binaries and archives for linux/amd64 and
# linux/arm64: dist/jobwatch-PKG_VERSION.linux-ARCH.tar.gz and dist/sha256sums.txt.
release: $(foreach a,$(RELEASE_ARCHES),$(DIST)/build/linux-$(a)/jobwatch $(DIST)/build/linux-$(a)/jobwatch-run)
	packaging/release.sh '$(DIST)' '$(PKG_VERSION)' '$(SOURCE_DATE_EPOCH)' $(RELEASE_ARCHES)

$(DIST)/build/linux-%/jobwatch: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=$* go build -trimpath -buildvcs=false \
		-ldflags "$(RELEASE_LDFLAGS)" -o $@ ./cmd/jobwatch

# The version flags are jobwatch's: jobwatch-run has none (it hands
# --version to jobwatch run).
$(DIST)/build/linux-%/jobwatch-run: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=$* go build -trimpath -buildvcs=false \
		-ldflags "-s -w -buildid=" -o $@ ./cmd/jobwatch-run

# The Debian and RPM packages, described once in packaging/nfpm.yaml and built
# by nfpm (pinned in tools/go.mod); DEB_ARCH=arm64 for the other one.
deb: $(DIST)/build/linux-$(DEB_ARCH)/jobwatch $(DIST)/build/linux-$(DEB_ARCH)/jobwatch-run $(DIST)/build/changelog.gz $(DIST)/build/jobwatch.1.gz
	$(NFPM_ENV) $(TOOL) nfpm package --config packaging/nfpm.yaml --packager deb \
		--target '$(DIST)/jobwatch_$(PKG_VERSION)_$(DEB_ARCH).deb'

rpm: $(DIST)/build/linux-$(DEB_ARCH)/jobwatch $(DIST)/build/linux-$(DEB_ARCH)/jobwatch-run $(DIST)/build/changelog.gz $(DIST)/build/jobwatch.1.gz
	$(NFPM_ENV) $(TOOL) nfpm package --config packaging/nfpm.yaml --packager rpm \
		--target '$(DIST)/jobwatch-$(PKG_VERSION)-1.$(RPM_ARCH).rpm'

# /usr/share/doc/jobwatch/changelog.gz, in Debian's format.
$(DIST)/build/changelog.gz: FORCE
	mkdir -p $(@D)
	packaging/debchangelog.sh '$(PKG_VERSION)' '$(SOURCE_DATE_EPOCH)' '$(MAINTAINER)' | gzip -n -9 >$@

# jobwatch(1), from kingpin's --help-man.
$(DIST)/build/jobwatch.1.gz: FORCE
	mkdir -p $(@D)
	packaging/manpage.sh '$(PKG_VERSION)' '$(SOURCE_DATE_EPOCH)' | gzip -n -9 >$@

clean:
	rm -rf $(DIST) jobwatch jobwatch-run

FORCE:
