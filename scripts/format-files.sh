#!/bin/sh
# The C sources clang-format owns (.clang-format, include/.clang-format):
# every tracked .c/.h but the generated ones, whose generators' output is
# compared byte for byte (abi.api_table, api.options). Outside a git checkout
# (a release tarball) the same set is found with find.
# Used by scripts/format.sh and the ctest format.check.
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")/.." || exit 1
{
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files '*.c' '*.h'
  else
    find abi bench bindings core examples include tests \
      -name node_modules -prune -o \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||'
  fi
} | grep -v -x -e 'bindings/gen/api_table.h' -e 'core/client/options_fields.h'
