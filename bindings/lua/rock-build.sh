#!/bin/sh
# The build step of agent_sandbox-scm-1.rockspec: SWIG generates
# agent_sandbox.core from the shared interface, the C compiler builds it
# (and agent_sandbox.server_core) against libagentsandbox(-server).
# Where the C libraries come from, first match wins:
#   1. $ASB_BUILD_DIR: a CMake build tree of this repo;
#   2. pkg-config agentsandbox / agentsandbox-server (an installed library);
#   3. the repo's build/ next to bindings/.
# A library found outside the linker's default paths is recorded as RPATH.
# Environment from luarocks: CC, CFLAGS, LIBFLAG, LUA_INCDIR.
# SPDX-License-Identifier: Apache-2.0
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=$HERE/rock-build
mkdir -p "$OUT"
SWIG=${SWIG:-$(command -v swig4.0 || command -v swig || true)}
[ -n "$SWIG" ] || { echo "rock-build: SWIG 4 is needed (apt-get install swig)" >&2; exit 1; }

client_cflags= client_libs= server_cflags= server_libs=
pick_build() {
  b=$1
  [ -f "$b/core/client/libagentsandbox.so" ] || return 1
  client_cflags="-I$REPO/include"
  client_libs="-L$b/core/client -Wl,-rpath,$b/core/client -lagentsandbox"
  server_cflags="-I$REPO/include"
  server_libs="-L$b/core/server -Wl,-rpath,$b/core/server -lagentsandbox-server"
}
if [ -n "${ASB_BUILD_DIR:-}" ]; then
  pick_build "$ASB_BUILD_DIR" || { echo "rock-build: no libagentsandbox in $ASB_BUILD_DIR" >&2; exit 1; }
elif pkg-config --exists agentsandbox 2>/dev/null; then
  client_cflags=$(pkg-config --cflags agentsandbox)
  libdir=$(pkg-config --variable=libdir agentsandbox)
  client_libs="$(pkg-config --libs agentsandbox) -Wl,-rpath,$libdir"
  server_cflags=$(pkg-config --cflags agentsandbox-server 2>/dev/null || echo "$client_cflags")
  server_libs="$(pkg-config --libs agentsandbox-server 2>/dev/null || echo -lagentsandbox-server) -Wl,-rpath,$libdir"
else
  pick_build "$REPO/build" || {
    echo "rock-build: libagentsandbox not found: build the repo (cmake --build build)," \
         "install it (pkg-config agentsandbox), or set ASB_BUILD_DIR" >&2
    exit 1
  }
fi

"$SWIG" -lua -no-old-metatable-bindings -nomoduleglobal -I"$REPO/bindings" -I"$REPO/include" \
  -module agent_sandbox_swig -o "$OUT/core_wrap.c" "$REPO/bindings/agentsandbox.i"
# shellcheck disable=SC2086
${CC:-cc} ${CFLAGS:--O2 -fPIC} -std=gnu11 -I"${LUA_INCDIR:-/usr/include/lua5.4}" $client_cflags \
  "$OUT/core_wrap.c" ${LIBFLAG:--shared} -o "$OUT/core.so" $client_libs
if [ -f "$HERE/server_core.c" ]; then
  # shellcheck disable=SC2086
  ${CC:-cc} ${CFLAGS:--O2 -fPIC} -std=gnu11 -I"${LUA_INCDIR:-/usr/include/lua5.4}" $server_cflags \
    "$HERE/server_core.c" ${LIBFLAG:--shared} -o "$OUT/server_core.so" $server_libs
fi
