#!/usr/bin/python3
"""Keeps the tool reference in docs/mcp.md equal to what agent-sandbox-mcp
serves: the section between the GENERATED markers is the output of
`agent-sandbox-mcp --print-tools-markdown` (made from core/mcp/tools.json).

    scripts/mcp-docs.py --check build/core/mcp/agent-sandbox-mcp docs/mcp.md
    scripts/mcp-docs.py --write build/core/mcp/agent-sandbox-mcp docs/mcp.md

--check (the ctest mcp.docs) fails with a diff when the page is stale.
SPDX-License-Identifier: Apache-2.0
"""
import difflib
import subprocess
import sys

BEGIN = "<!-- BEGIN GENERATED TOOL REFERENCE: scripts/mcp-docs.py --write -->\n"
END = "<!-- END GENERATED TOOL REFERENCE -->\n"


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in ("--check", "--write"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, binary, page = sys.argv[1:]
    generated = subprocess.run([binary, "--print-tools-markdown"], check=True,
                               capture_output=True, text=True).stdout
    text = open(page, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        print(f"{page}: the GENERATED markers are missing", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    current, tail = rest.split(END, 1)
    if mode == "--write":
        with open(page, "w", encoding="utf-8") as f:
            f.write(head + BEGIN + generated + END + tail)
        return 0
    if current == generated:
        return 0
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), generated.splitlines(True),
                                               page, "agent-sandbox-mcp --print-tools-markdown"))
    print(f"\n{page} is stale: run scripts/mcp-docs.py --write {binary} {page}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
