#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need. Idempotent:
# does nothing when everything is present. Needs root (or sudo).
#   --code-interpreter-full  also the rest of E2B's code-interpreter image
#                            (templates/code-interpreter/packages.txt [full])
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

full=0
for a in "$@"; do
  case "$a" in
    --code-interpreter-full) full=1 ;;
    *) echo "usage: $0 [--code-interpreter-full]" >&2; exit 2 ;;
  esac
done

# The code interpreter's packages: one list, templates/code-interpreter/
# packages.txt, also read by the engine's preflight.
ci_packages() { # section...
  local list section
  list="$(dirname "$0")/../templates/code-interpreter/packages.txt"
  for section in "$@"; do
    awk -v s="[$section]" '/^\[/ {on = ($1 == s); next} on {sub(/#.*/, ""); if (NF) print $1}' "$list"
  done
}

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config git
  libcurl4-openssl-dev libcjson-dev libssl-dev zlib1g-dev
  libmicrohttpd-dev libseccomp-dev libzmq3-dev libyaml-dev
  # checks
  abigail-tools clang clang-format libclang-rt-14-dev valgrind python3
  # envd.endwrite and e2e.cmd_load count the send system calls of a stream's end
  strace
  # the code interpreter's kernels and libraries (E2B's image, core part)
  $(ci_packages core)
  $(if [ "$full" = 1 ]; then ci_packages full; fi)
  # the Python binding (built and tested offline, no PyPI): SWIG, headers,
  # venv + pip, setuptools/wheel/build for wheels and sdists, pytest
  swig python3-dev python3-venv python3-pip python3-setuptools python3-wheel
  python3-build python3-pytest python3-pytest-asyncio
  # E2B's own Python SDK tests through agent_sandbox.compat (a manual check,
  # tests/e2b-python/run.sh): their pytest.ini sets a per-test timeout, and
  # many of their test modules import httpx
  python3-pytest-timeout python3-httpx
  # the Lua 5.4 binding: interpreter, headers (SWIG's module builds against
  # them), luarocks (the rockspec's offline `luarocks make`), busted (its
  # tests, run as `lua5.4 /usr/bin/busted`) and dkjson (its JSON)
  lua5.4 liblua5.4-dev luarocks lua-busted lua-dkjson
  # the FFI examples (examples/ffi: LuaJIT's ffi; ctypes needs only python3)
  luajit
  # sandbox templates and baselines; libarchive reads container image
  # layers (oci:/docker-archive: template bases)
  libarchive-dev busybox-static bubblewrap runc iproute2 e2fsprogs util-linux procps
  # sandbox networking (core/net): nftables through libnftables' JSON input,
  # links/addresses/routes through libnl-route-3; the egress services
  # (core/net/egress): libldns for DNS messages; the closed-topology tests
  # (tests/net): dnsmasq, nft, curl, openssl
  libnftables-dev libnl-route-3-dev libldns-dev dnsmasq-base nftables curl openssl
  # nss-myhostname for the base template's "hosts: files myhostname dns"
  # (core/iso/template.c): glibc clients in a sandbox (Python, Node, wget)
  # resolve another sandbox's https://<port>-<id>.localhost URL with it,
  # also with --no-network. A sandbox's /usr is the host's, so the module
  # only has to be installed here; the host's own /etc/nsswitch.conf is
  # kept as it was (below)
  libnss-myhostname
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]}"
# libnss-myhostname's postinst adds myhostname to the hosts line of the
# HOST's /etc/nsswitch.conf on a first install. The sandboxes need only its
# module (their nsswitch.conf is the template's), and the host's name
# resolution is its admin's: the file is put back as it was (also if the
# install fails half-way). Add myhostname there yourself to have
# *.localhost resolve for glibc clients on the host too.
nss_saved=""
if [[ " ${missing[*]} " == *" libnss-myhostname "* ]] && [ -f /etc/nsswitch.conf ]; then
  nss_saved=$(mktemp)
  cp -p /etc/nsswitch.conf "$nss_saved"
  restore_nss() {
    if ! cmp -s "$nss_saved" /etc/nsswitch.conf; then
      $SUDO cp "$nss_saved" /etc/nsswitch.conf
      echo "deps: /etc/nsswitch.conf kept as it was (libnss-myhostname's postinst edits its hosts line)"
    fi
    rm -f "$nss_saved"
  }
  trap restore_nss EXIT
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
