#!/bin/sh
# Prints the package version (Debian's and RPM's) of a version as
# `git describe --tags --always --dirty` gives it:
#   v0.1.0                 -> 0.1.0
#   v0.1.0-3-gabc1234      -> 0.1.0+3.gabc1234      (3 commits after the tag)
#   v0.1.0-rc.1            -> 0.1.0~rc.1            (a pre-release sorts before 0.1.0)
#   abc1234                -> 0.0.0~gitabc1234      (no tag yet: before any release)
#   any of them, -dirty    -> ...+dirty
# The result holds no hyphen (Debian would read one as the start of a
# revision, RPM refuses one) and starts with a digit.
set -eu
v=${1:?usage: debversion.sh VERSION}
suffix=
case $v in
*-dirty) v=${v%-dirty}; suffix=+dirty ;;
esac
case $v in
v[0-9]*)
  v=${v#v}
  # Commits after the tag: X-N-gHASH.
  if printf '%s\n' "$v" | grep -Eq -- '-[0-9]+-g[0-9a-f]+$'; then
    v=$(printf '%s\n' "$v" | sed -E 's/-([0-9]+)-(g[0-9a-f]+)$/+\1.\2/')
  fi
  # A pre-release (v0.1.0-rc.1): ~ sorts before the release itself.
  v=$(printf '%s\n' "$v" | sed -E 's/-/~/; s/-/./g')
  ;;
*)
  v=0.0.0~git$(printf '%s\n' "$v" | sed -E 's/[^A-Za-z0-9.+~]/./g')
  ;;
esac
printf '%s%s\n' "$v" "$suffix"
