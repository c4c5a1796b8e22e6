#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""While node ASB_1.0 is open (before the 1.0.0 release is tagged), rewrite
its global list from the ASB_API declarations of the public headers. After
the release, add new symbols to a new node by hand instead (docs/abi.md)."""
import glob
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
decl = re.compile(r"ASB_API\s*\(((?:[^()]|\([^()]*\))*)\)\s*(\w+)\s*\(")
names = set()
for p in [f"{root}/include/agentsandbox.h"] + glob.glob(f"{root}/include/agentsandbox/*.h"):
    if p.endswith("/server.h"):
        continue
    t = re.sub(r"/\*.*?\*/", "", open(p).read(), flags=re.S)
    t = re.sub(r"^\s*#.*?(?<!\\)$", "", t, flags=re.M | re.S)
    names.update(m.group(2) for m in decl.finditer(t))
path = f"{root}/abi/libagentsandbox.map"
text = open(path).read()
body = "\n".join(f"    {n};" for n in sorted(names))
new = re.sub(r"(ASB_1\.0 \{\n  global:\n)(.*?)(\n  local:)", lambda m: m.group(1) + body + m.group(3),
             text, flags=re.S)
open(path, "w").write(new)
print(f"{len(names)} symbols in ASB_1.0")
