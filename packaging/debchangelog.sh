#!/bin/sh
# Prints the package's Debian changelog (debian/changelog format) for one
# version, dated by the commit (SOURCE_DATE_EPOCH), so that it is the same on
# every build of the commit. The changes themselves are in CHANGELOG.md.
# Usage: packaging/debchangelog.sh PKG_VERSION SOURCE_DATE_EPOCH MAINTAINER
set -eu
version=$1 epoch=$2 maintainer=$3
cat <<END
jobwatch ($version) unstable; urgency=medium

  * jobwatch $version.
    Built by make deb from its git tag or commit. What changed:
    CHANGELOG.md in the source,
    https://github.com/jobwatch/jobwatch/blob/main/CHANGELOG.md

 -- $maintainer  $(LC_ALL=C date -u -R -d "@$epoch")
END
