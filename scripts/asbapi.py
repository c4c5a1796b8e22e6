# SPDX-License-Identifier: Apache-2.0
"""Reads the public headers (include/agentsandbox/*.h) and the ABI
description (abi/api.json) for the generator (scripts/gen-bindings.py) and
the checks (tests/abi/check_description.py, check_bindings_coverage.py,
check_docs_coverage.py). Standard library only.

The headers are parsed with regular expressions, which is enough because
they follow a fixed style (docs/abi.md): `ASB_API(type) name(params);`,
options structs as `typedef struct name { members } name;`, callback types
as `typedef R ASB_CALLBACK(name)(params);`, handles as
`typedef struct name name;` in types.h. A declaration the parser cannot read
is an error, not something skipped."""
import glob
import json
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SERVER_HEADER = "server.h"


class HeaderError(Exception):
    pass


def _strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return text


def _split_params(s):
    out, depth, cur = [], 0, ""
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur)
    return [re.sub(r"\s+", " ", p).strip() for p in out]


def _param(p):
    """'const asb_x *const *name' -> (type 'const asb_x *const *', name)."""
    if p == "void":
        return None
    m = re.match(r"^(.*?)(\w+)$", p)
    if not m:
        raise HeaderError(f"cannot read parameter {p!r}")
    typ = re.sub(r"\s+", " ", m.group(1)).strip()
    typ = re.sub(r"\s*\*", " *", typ).replace("* *", "**").replace("*const", "* const")
    typ = re.sub(r"\s+", " ", typ).strip()
    return {"type": normtype(typ), "name": m.group(2)}


def normtype(t):
    """A canonical spelling of a C type: 'const char *const *' etc."""
    t = re.sub(r"\s*\*\s*", "*", t.strip())
    t = t.replace("*const", "* const ")
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"(\w)\*", r"\1 *", t)
    return t.replace("* const *", "*const *")


class Header:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.text = open(path).read()
        body = _strip(self.text)
        # Keep #define lines for macros, drop the other directives.
        self.macros = {m[0]: re.sub(r"\s*\\\n\s*", " ", m[1]).strip() for m in re.findall(
            r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:\([^)]*\))?((?:.*\\\n)*.*)$", body, re.M)}
        code = re.sub(r"^\s*#(?:.*\\\n)*.*$", " ", body, flags=re.M)
        self.functions = {}
        for m in re.finditer(r"ASB_API\s*\(((?:[^()]|\([^()]*\))*)\)\s*(\w+)\s*\(([^;]*?)\)\s*;",
                             code, re.S):
            ret, name, params = m.group(1), m.group(2), m.group(3)
            ps = [_param(p) for p in _split_params(params)]
            ps = [p for p in ps if p]
            self.functions[name] = {"returns": normtype(ret), "params": ps, "header": self.name}
        n_api = len(re.findall(r"ASB_API\s*\(", code))
        if n_api != len(self.functions):
            raise HeaderError(f"{self.name}: read {len(self.functions)} of {n_api} ASB_API "
                              "declarations")
        self.structs = {}
        for m in re.finditer(r"typedef struct (\w+) \{(.*?)\} (\w+);", code, re.S):
            if m.group(1) != m.group(3):
                raise HeaderError(f"{self.name}: struct {m.group(1)} typedef'd as {m.group(3)}")
            self.structs[m.group(1)] = self._members(m.group(2))
        for m in re.finditer(r"(?<!typedef )struct (\w+) \{(.*?)\};", code, re.S):
            self.structs[m.group(1)] = self._members(m.group(2))
        self.handles = set(re.findall(r"typedef struct (\w+) \1;", code))
        self.callbacks = {}
        for m in re.finditer(r"typedef ([\w\s\*]+?) ASB_CALLBACK\((\w+)\)\s*\(([^;]*?)\)\s*;",
                             code, re.S):
            ps = [p for p in (_param(p) for p in _split_params(m.group(3))) if p]
            self.callbacks[m.group(2)] = {"returns": normtype(m.group(1)), "params": ps}
        self.enums = set(re.findall(r"typedef enum (\w+) \{", code))

    @staticmethod
    def _members(body):
        out = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            p = _param(decl)
            out.append(p)
        return out


class Headers:
    """Every public header; functions tagged with their library."""

    def __init__(self, root=ROOT):
        paths = sorted(glob.glob(os.path.join(root, "include", "agentsandbox", "*.h")))
        self.headers = {os.path.basename(p): Header(p) for p in paths}
        self.functions, self.structs, self.callbacks, self.handles = {}, {}, {}, set()
        self.macros = {}
        for h in self.headers.values():
            lib = "agentsandbox-server" if h.name == SERVER_HEADER else "agentsandbox"
            for n, f in h.functions.items():
                f["lib"] = lib
                self.functions[n] = f
            self.structs.update(h.structs)
            self.callbacks.update(h.callbacks)
            self.handles |= h.handles
            self.macros.update(h.macros)


def load_manifest(root=ROOT):
    with open(os.path.join(root, "abi", "api.json")) as f:
        return json.load(f)


def manifest_functions(man):
    """name -> (header, entry) over every header section of the manifest."""
    out = {}
    for hname, sec in man["headers"].items():
        for name, entry in sec.get("functions", {}).items():
            out[name] = (hname, entry)
    return out


def manifest_options(man):
    out = {}
    for hname, sec in man["headers"].items():
        for name, entry in sec.get("options", {}).items():
            out[name] = (hname, entry)
    return out


def _dump(o, ind=0, lead=0, width=100):
    """lead: columns already used on the line where o starts."""
    sp = "  " * ind
    one = json.dumps(o)
    if not isinstance(o, (dict, list)) or (lead + len(one) + 1 <= width and ind >= 3):
        return one
    if isinstance(o, dict):
        items = []
        for k, v in o.items():
            head = f'{sp}  {json.dumps(k)}: '
            items.append(head + _dump(v, ind + 1, len(head)))
        return "{\n" + ",\n".join(items) + "\n" + sp + "}"
    if lead + len(one) + 1 <= width:
        return one
    return "[\n" + ",\n".join(sp + "  " + _dump(v, ind + 1, len(sp) + 2) for v in o) + "\n" + sp + "]"


def dump_manifest(man):
    """abi/api.json's layout: short entries on one line, 100 columns."""
    return _dump(man) + "\n"
