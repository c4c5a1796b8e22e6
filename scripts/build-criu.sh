#!/usr/bin/env bash
# Builds criu 4.1.1 with our patches (scripts/criu/series) into a cache dir
# and checks it with `criu check`. Idempotent: a cache that already holds a
# criu of the same version and patches is left as it is (no apt, instant).
# Needs root (apt-get, and criu check).
#
#   scripts/build-criu.sh [--cache DIR] [--orig TARBALL]
#     --cache DIR      where to build and install (default $ASB_CRIU_CACHE,
#                      else /var/cache/agent-sandbox/criu); the binary is
#                      DIR/bin/criu, DIR/stamp says what it was built from
#     --orig TARBALL   a criu_4.1.1.orig.tar.xz already at hand (its sha256
#                      must be the one below) instead of downloading it
#
# Where the pieces come from, all through apt:
# - the source: criu_4.1.1.orig.tar.xz (upstream's v4.1.1 release) of
#   Debian trixie's criu 4.1.1-1, with `apt-get source --download-only`
#   under an apt configuration of its own (a sources list naming only
#   trixie's deb-src, and its own lists dir, in a temp dir): the system's
#   sources and package lists never see trixie, so no later apt-get install
#   can pull a trixie binary, whatever happens to this script. The machine's
#   mirror answers 404 for that package's .dsc and debian.tar.xz (and for
#   bookworm's criu_3.17.1.orig.tar.xz), so only the tarball is used: its
#   sha256 is checked here (apt checks it against trixie's Sources too).
#   Debian's own patches are not applied (its debian.tar.xz is not served;
#   criu check and the criu.* tests pass without them).
# - the build dependencies: Debian 12's (`apt-get build-dep criu`, with a
#   deb-src entry for the suites of /etc/apt/sources.list.d/debian.sources in
#   a file of its own, removed on exit).
# The build happens in a temp dir under the cache; the binary is moved into
# place (rename) only once it passes `criu check`, so a criu already there
# keeps working for its users while a new one builds.
# See docs/lifecycle.md ("Pause with memory to disk (CRIU)").
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

VERSION=4.1.1
DEBVERSION=4.1.1-1
ORIG_SHA256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
MIRROR=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

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
die() { echo "build-criu.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"
[ -f "$patches/series" ] || die "missing $patches/series"
ours() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patches/series"; }

# shellcheck disable=SC2046 # patch names have no spaces
stamp="criu $VERSION $(cd "$patches" && cat series $(ours) | sha256sum | cut -d' ' -f1)"
current() { [ -x "$cache/bin/criu" ] && [ "$(cat "$cache/stamp" 2>/dev/null)" = "$stamp" ]; }
if current; then
  echo "build-criu.sh: $cache/bin/criu is criu $VERSION with our patches already"
  exit 0
fi

mkdir -p "$cache/bin"
# One build at a time per cache (another run waits, then finds it done).
exec 9>"$cache/.lock"
flock 9
if current; then
  echo "build-criu.sh: $cache/bin/criu is criu $VERSION with our patches already"
  exit 0
fi

srcfile=/etc/apt/sources.list.d/asb-criu-build-deps.sources
work=""
cleanup() {
  rm -f "$srcfile"
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
work="$(mktemp -d "$cache/build.XXXXXX")"

sha_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$ORIG_SHA256" ]; }
tarball="$work/criu_$VERSION.orig.tar.xz"
if [ -n "$orig" ]; then
  sha_ok "$orig" || die "$orig is not criu_$VERSION.orig.tar.xz (sha256 $ORIG_SHA256)"
  cp "$orig" "$tarball"
elif [ -f "$cache/criu_$VERSION.orig.tar.xz" ] && sha_ok "$cache/criu_$VERSION.orig.tar.xz"; then
  cp "$cache/criu_$VERSION.orig.tar.xz" "$tarball"
else
  # trixie's deb-src under an apt configuration of this run only.
  apt_dir="$work/apt"
  mkdir -p "$apt_dir/lists/partial"
  echo "deb-src [signed-by=$KEYRING] $MIRROR trixie main" > "$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/none"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::pkgcache=$apt_dir/pkgcache.bin"
            -o "Dir::Cache::srcpkgcache=$apt_dir/srcpkgcache.bin")
  echo "build-criu.sh: downloading criu_$VERSION.orig.tar.xz (Debian trixie's criu $DEBVERSION source)"
  if ! apt-get "${apt_opts[@]}" update -qq > "$work/update.log" 2>&1; then
    cat "$work/update.log" >&2
    die "apt-get update of trixie's deb-src ($MIRROR trixie main) failed: criu's source needs that mirror (or --orig criu_$VERSION.orig.tar.xz, sha256 $ORIG_SHA256)"
  fi
  if ! ls "$apt_dir/lists/"*_trixie_main_source_Sources* > /dev/null 2>&1; then
    cat "$work/update.log" >&2
    die "apt-get update could not fetch trixie's Sources index from $MIRROR (is the network or the mirror down?): criu's source needs it (or --orig criu_$VERSION.orig.tar.xz, sha256 $ORIG_SHA256)"
  fi
  # The .dsc and debian.tar.xz may answer 404 on this mirror (apt-get then
  # fails); only the orig tarball matters, and it is checked below.
  (cd "$work" && apt-get "${apt_opts[@]}" source --download-only -qq "criu=$DEBVERSION") \
    > "$work/source.log" 2>&1 || true
  if ! [ -f "$tarball" ] || ! sha_ok "$tarball"; then
    cat "$work/source.log" >&2
    die "could not download criu_$VERSION.orig.tar.xz through apt from $MIRROR trixie (deb-src); criu needs it (or --orig FILE, sha256 $ORIG_SHA256)"
  fi
  rm -rf "$apt_dir"
  # Keep it: a later build (other patches) needs no download.
  cp "$tarball" "$cache/criu_$VERSION.orig.tar.xz.new"
  mv -f "$cache/criu_$VERSION.orig.tar.xz.new" "$cache/criu_$VERSION.orig.tar.xz"
fi

# Debian 12's build dependencies of its criu (3.17.1) build 4.1.1 too.
main=/etc/apt/sources.list.d/debian.sources
if [ -f "$main" ]; then
  sed -e 's/^Types:.*/Types: deb-src/' "$main" > "$srcfile"
else
  printf 'Types: deb-src\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: %s\n' \
    "$MIRROR" "$KEYRING" > "$srcfile"
fi
if ! apt-get -o DPkg::Lock::Timeout=600 update -qq > "$work/update.log" 2>&1; then
  cat "$work/update.log" >&2
  die "apt-get update (with bookworm's deb-src) failed: criu's build dependencies need the Debian mirror"
fi
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends patch > /dev/null
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 build-dep -y -qq criu > "$work/build-dep.log" 2>&1 ||
  { cat "$work/build-dep.log" >&2; die "apt-get build-dep criu failed"; }
rm -f "$srcfile"
apt-get -o DPkg::Lock::Timeout=600 update -qq > /dev/null 2>&1 || true # drop bookworm's Sources lists again

tar -xf "$tarball" -C "$work"
src="$work/criu-$VERSION"
[ -d "$src" ] || die "criu_$VERSION.orig.tar.xz has no criu-$VERSION/"
for p in $(ours); do
  patch -d "$src" -p1 -s --no-backup-if-mismatch < "$patches/$p" || die "patch $p does not apply"
done
echo "build-criu.sh: building criu $VERSION (make -j2 criu)"
make -C "$src" -j2 criu > "$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; die "make criu failed"; }
# Only a criu that passes its kernel feature check goes into the cache.
"$src/criu/criu" check || die "the new criu fails 'criu check' on this kernel; not installed"
install -m 0755 "$src/criu/criu" "$cache/bin/criu.new"
mv -f "$cache/bin/criu.new" "$cache/bin/criu"
echo "$stamp" > "$cache/stamp.new"
mv -f "$cache/stamp.new" "$cache/stamp"
echo "build-criu.sh: criu $VERSION (patched) is in $cache/bin/criu"
