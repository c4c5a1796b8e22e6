#!/usr/bin/env bash
# Builds Debian 12's criu (3.17.1) with our patches (scripts/criu/series:
# the [vvar_vclock] mapping of Linux >= 6.13, AMX-sized XSAVE frames, and
# what dumping and restoring our sandboxes needs) into a cache dir, and
# checks it with `criu check`. Idempotent: does nothing when the cache
# already holds a criu built from the same source version and patches.
# Needs root (apt-get build-dep, and criu check).
#
#   scripts/build-criu.sh [--cache DIR] [--orig TARBALL]
#     --cache DIR      where to build and install (default $ASB_CRIU_CACHE,
#                      else /var/cache/agent-sandbox/criu); the binary is
#                      DIR/bin/criu
#     --orig TARBALL   criu_3.17.1.orig.tar.xz (or a .tar of the upstream
#                      v3.17.1 tree) when the Debian mirror does not serve
#                      the orig tarball; Debian's debian/ dir, patches and
#                      build dependencies still come from apt
#
# The sources come from Debian's apt only: a deb-src entry for the same
# suites as /etc/apt/sources.list.d/debian.sources is added for the run in
# a separate file and removed on exit (debian.sources is never edited).
# See docs/lifecycle.md ("Pause with memory to disk (CRIU)").
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
patches="$here/criu"
cache="${ASB_CRIU_CACHE:-/var/cache/agent-sandbox/criu}"
orig=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    --orig) orig="$(realpath "$2")"; shift 2 ;;
    *) echo "usage: $0 [--cache DIR] [--orig TARBALL]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "build-criu.sh: needs root" >&2; exit 1; }
[ -f "$patches/series" ] || { echo "build-criu.sh: missing $patches/series" >&2; exit 1; }
ours() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patches/series"; }

srcfile=/etc/apt/sources.list.d/asb-criu-src.sources
work=""
cleanup() {
  rm -f "$srcfile"
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# deb-src for the suites the machine's debian.sources names (its mirror and
# snapshot), in a file of our own.
add_deb_src() {
  local main=/etc/apt/sources.list.d/debian.sources
  if [ -f "$main" ]; then
    sed -e 's/^Types:.*/Types: deb-src/' "$main" > "$srcfile"
  else
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$srcfile"
  fi
  apt-get update -qq
}

add_deb_src
version="$(apt-cache showsrc criu | awk '/^Version:/ {print $2; exit}')"
[ -n "$version" ] || { echo "build-criu.sh: apt has no criu source package" >&2; exit 1; }
stamp="$version $(cd "$patches" && cat series $(ours) | sha256sum | cut -d' ' -f1)"
if [ -x "$cache/bin/criu" ] && [ "$(cat "$cache/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "criu $version (patched) is already in $cache/bin/criu"
  exit 0
fi

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  dpkg-dev patch > /dev/null
DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq criu > /dev/null

mkdir -p "$cache"
work="$(mktemp -d "$cache/src.XXXXXX")"
cd "$work"
upver="${version%-*}"
if [ -z "$orig" ]; then
  # apt-get source also unpacks and applies Debian's patches (dpkg-source).
  if ! apt-get source -qq "criu=$version" > source.log 2>&1; then
    cat source.log >&2
    echo "build-criu.sh: apt-get source criu failed; if only the orig tarball is missing on this mirror, pass --orig" >&2
    exit 1
  fi
else
  # Debian's packaging from apt, the upstream tree from --orig.
  apt-get source -qq --download-only "criu=$version" > source.log 2>&1 || true
  debtar="$(ls criu_*.debian.tar.* 2>/dev/null | head -1)"
  [ -n "$debtar" ] || { cat source.log >&2; echo "build-criu.sh: no Debian packaging for criu $version" >&2; exit 1; }
  mkdir "criu-$upver"
  tar -xf "$orig" -C "criu-$upver" --strip-components=1
  tar -xf "$debtar" -C "criu-$upver"
  (cd "criu-$upver" && while read -r p; do
      case "$p" in ''|'#'*) continue ;; esac
      patch -p1 -s < "debian/patches/$p"
    done < debian/patches/series)
fi
cd "criu-$upver"
for p in $(ours); do patch -p1 -s < "$patches/$p"; done
make -j2 criu > "$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
# Only a criu that passes its kernel feature check goes into the cache.
criu/criu check
install -D -m 0755 criu/criu "$cache/bin/criu.new"
mv -f "$cache/bin/criu.new" "$cache/bin/criu"
echo "$stamp" > "$cache/stamp"
echo "criu $version (patched) is in $cache/bin/criu"
