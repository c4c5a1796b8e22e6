#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""While the 1.0 nodes are open (before the 1.0.0 release is tagged), rewrite
their global lists from the ASB_API declarations of the public headers:
node ASB_1.0 of abi/libagentsandbox.map from every header but server.h, and
node ASB_SERVER_1.0 of abi/libagentsandbox-server.map from server.h. After
the release, add new symbols to a new node by hand instead (docs/abi.md)."""
import glob
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
decl = re.compile(r"ASB_API\s*\(((?:[^()]|\([^()]*\))*)\)\s*(\w+)\s*\(")


def declared(paths):
    names = set()
    for p in paths:
        t = re.sub(r"/\*.*?\*/", "", open(p).read(), flags=re.S)
        t = re.sub(r"^\s*#.*?(?<!\\)$", "", t, flags=re.M | re.S)
        names.update(m.group(2) for m in decl.finditer(t))
    return names


def sync(path, node, names):
    text = open(path).read()
    body = "\n".join(f"    {n};" for n in sorted(names))
    new, n = re.subn(r"(" + re.escape(node) + r" \{\n  global:\n)(.*?)(\n  local:)",
                     lambda m: m.group(1) + body + m.group(3), text, flags=re.S)
    if n != 1:
        sys.exit(f"{path}: node {node} not found")
    open(path, "w").write(new)
    print(f"{len(names)} symbols in {node}")


headers = [f"{root}/include/agentsandbox.h"] + glob.glob(f"{root}/include/agentsandbox/*.h")
server = [p for p in headers if p.endswith("/server.h")]
client = [p for p in headers if not p.endswith("/server.h")]
sync(f"{root}/abi/libagentsandbox.map", "ASB_1.0", declared(client))
sync(f"{root}/abi/libagentsandbox-server.map", "ASB_SERVER_1.0", declared(server))
