#!/usr/bin/env bash
# The coding-agent CLIs the agents tests drive, installed once into a
# host-wide prefix that every sandbox built on the base template sees
# read-only (the base mounts the host's /usr): /usr/local/lib/agent-sandbox/
# agents (npm -g layout: bin/, lib/node_modules/). The agents service looks
# there after its own install prefix (docs/agents.md). Idempotent: a
# version already installed is kept, so only the first run downloads
# (~1.3 GB from the npm registry; the time is printed).
#
# The versions are pinned so every run drives the same CLIs. Qwen Code 0.15
# is its last line that runs on Node.js 20 (the host's node); later ones
# need 22.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
PREFIX=${ASB_AGENTS_HOST_PREFIX:-/usr/local/lib/agent-sandbox/agents}
PKGS=(
  "@openai/codex@0.171.0"
  "@qwen-code/qwen-code@0.15.10"
  "@anthropic-ai/claude-code@2.1.197"
  "opencode-ai@1.18.33"
)
missing=()
for spec in "${PKGS[@]}"; do
  name=${spec%@*}
  want=${spec##*@}
  pj="$PREFIX/lib/node_modules/$name/package.json"
  have=$( [ -f "$pj" ] && node -p "require('$pj').version" 2>/dev/null || true)
  [ "$have" = "$want" ] || missing+=("$spec")
done
# A tarball of one of them, for the tests' local npm registry (the install
# on demand path: npm install -g from a registry inside the sandbox).
TARBALLS=$(dirname "$PREFIX")/tarballs
QWEN_TGZ="$TARBALLS/qwen-code-qwen-code-0.15.10.tgz"
if [ ! -s "$QWEN_TGZ" ]; then
  mkdir -p "$TARBALLS"
  (cd "$TARBALLS" && npm pack --silent "@qwen-code/qwen-code@0.15.10" >/dev/null)
  echo "agents cache: packed $QWEN_TGZ"
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "agents cache: up to date in $PREFIX"
  exit 0
fi
echo "agents cache: installing ${missing[*]} into $PREFIX"
start=$(date +%s)
mkdir -p "$PREFIX"
npm install -g --prefix "$PREFIX" --no-audit --no-fund --no-update-notifier "${missing[@]}"
echo "agents cache: installed in $(( $(date +%s) - start )) s ($(du -sh "$PREFIX" | cut -f1))"
