#!/bin/bash
# Runs a test that starts engines of its own with the sandboxes' network ON,
# inside the closed topology of tests/net/topo.sh: the test (and so every
# engine and sandbox it starts) is in the topology's engine namespace, whose
# only link leads to the test-internet namespace (198.18.0.0/15) and nowhere
# else, so no packet can leave the machine whatever a rule does. Used by the
# net.client_* tests (the bindings' network calls against the real engine).
#
# usage: in_net_topo.sh CMD [ARGS...]   (root; exits 77 without root,
# nsenter, dnsmasq or curl). Both namespaces go on every exit path.
# SPDX-License-Identifier: Apache-2.0
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "in_net_topo: needs root: skipped"; exit 77; }
for c in nsenter dnsmasq curl ip; do
  command -v "$c" >/dev/null 2>&1 || { echo "in_net_topo: no $c: skipped"; exit 77; }
done
. "$here/../net/topo.sh"
trap topo_down EXIT
trap 'exit 130' INT TERM
topo_up || exit 1
# The guard that keeps every other test's sandboxes offline
# (tests/CMakeLists.txt) is lifted here only, inside the closed topology.
unset ASB_NO_NETWORK
topo_eng "$@"
