#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fail when a library's exports, its linker version script, its public
headers and the recorded symbol list disagree, or when a symbol lacks the
project prefix or its version node.

usage: check_exports.py --lib LIB.so --map X.map --symbols X.symbols
                        --prefix asb_ HEADER...
"""
import argparse
import re
import subprocess
import sys


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms, unversioned = {}, []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":
            continue  # version node definitions themselves
        name = parts[2]
        if "@" in name:
            base, _, ver = name.partition("@")
            syms[base] = ver.lstrip("@")
        else:
            unversioned.append(name)
    return syms, unversioned


def map_globals(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    names, nodes = {}, []
    for node, body in re.findall(r"([\w.]+)\s*\{(.*?)\}\s*[\w.]*\s*;", text, re.S):
        nodes.append(node)
        glob = body.split("local:")[0].replace("global:", "")
        for sym in re.findall(r"([A-Za-z_]\w*)\s*;", glob):
            names[sym] = node
    return names, nodes


def header_decls(paths):
    decl = re.compile(r"ASB_API\s*\(((?:[^()]|\([^()]*\))*)\)\s*(\w+)\s*\(")
    names = set()
    for p in paths:
        text = re.sub(r"/\*.*?\*/", "", open(p).read(), flags=re.S)
        text = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)
        names.update(m.group(2) for m in decl.finditer(text))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--map", required=True)
    ap.add_argument("--symbols", required=True)
    ap.add_argument("--prefix", default="asb_")
    ap.add_argument("headers", nargs="+")
    a = ap.parse_args()

    errors = []
    exp, unversioned = exported(a.lib)
    mapped, nodes = map_globals(a.map)
    declared = header_decls(a.headers)
    listed = [l.strip() for l in open(a.symbols) if l.strip()]
    if listed != sorted(listed):
        errors.append(f"{a.symbols} is not sorted")
    listed = set(listed)

    for name in unversioned:
        errors.append(f"exported without a version node: {name}")
    for name, ver in exp.items():
        if ver not in nodes:
            errors.append(f"{name} has version {ver}, not a node of {a.map}")
    sets = {"exported by the library": set(exp), "in the version script": set(mapped),
            "declared with ASB_API in the headers": declared,
            f"listed in {a.symbols}": listed}
    every = set().union(*sets.values())
    for name in sorted(every):
        if not name.startswith(a.prefix):
            errors.append(f"{name} lacks the '{a.prefix}' prefix")
        missing = [k for k, v in sets.items() if name not in v]
        if missing:
            present = [k for k, v in sets.items() if name in v]
            errors.append(f"{name}: {', '.join(present)}, but not {', '.join(missing)}")
    if errors:
        print("\n".join(errors))
        print(f"{len(errors)} ABI problem(s). If the change is intended, update "
              "abi/ (see docs/abi.md, 'Changing the ABI').")
        return 1
    print(f"ok: {len(exp)} symbols agree across library, version script, "
          "headers and symbol list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
