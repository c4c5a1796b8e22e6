#!/bin/sh
# Formats the C sources in place (clang-format, the project's .clang-format);
# `scripts/format.sh --check` changes nothing and fails listing what differs
# (the ctest format.check runs that).
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")/.." || exit 1
CF=${CLANG_FORMAT:-clang-format}
command -v "$CF" >/dev/null || { echo "format: $CF not found (apt install clang-format)" >&2; exit 1; }
if [ "$1" = "--check" ]; then
  # one clang-format for all files; it names each file and line that differs
  if ! scripts/format-files.sh | xargs "$CF" --style=file --dry-run --Werror 2>&1 | grep -m 40 'error:'; then
    exit 0
  fi
  echo "format: the files above differ from clang-format's output (run scripts/format.sh)" >&2
  exit 1
fi
scripts/format-files.sh | xargs "$CF" -i --style=file
