#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""abi.description: fail when the ABI description (abi/api.json) and the
public headers disagree, or when bindings/gen/ is stale.

Checked, per function: it is in both (in the same header's section), its
parameter names and count, that its outputs are its first parameters (the
out-first rule of docs/abi.md) with the declared kind and type and a real
free function or owner, that it names the cancel parameter when it takes an
options struct carrying a cancel token, that what a pointer it returns is
said, that a free function frees what it takes. Per handle: in types.h and
in the description, with a free function or an owner. Per options struct:
its version macro, init macro and init function exist, and its string,
array and callback members are exactly the struct's (the SWIG constructors
copy and free the strings named there: one left out would leak). Per
callback type: in both.

usage: check_description.py [--root DIR]"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import asbapi  # noqa: E402

FN_KEYS = {"params", "blocking", "cancel", "out", "returns", "length", "frees", "any_thread",
           "callbacks", "note", "lifecycle"}
OUT_KEYS = {"param", "kind", "type", "free", "owner", "optional", "also_on", "length", "size",
            "note"}
OPT_KEYS = {"version", "init_macro", "init", "strings", "arrays", "bytes", "callbacks",
            "userdata", "cancel", "note", "since"}
HANDLE_KEYS = {"header", "free", "owner", "explicit", "note"}
RETURNS = {"borrowed", "static", "thread"}
THREADS = {"caller", "server", "any"}
FROM = {"opts", "params", "process", "watch", "server"}

errors = []


def err(msg):
    errors.append(msg)


def check_functions(man, hdrs):
    mf = asbapi.manifest_functions(man)
    for name, f in hdrs.functions.items():
        if name not in mf:
            err(f"{name} ({f['header']}): declared in the headers, missing from abi/api.json")
    for name, (hname, e) in mf.items():
        f = hdrs.functions.get(name)
        if not f:
            err(f"{name}: in abi/api.json ({hname}) but not declared in any header")
            continue
        where = f"{name} ({f['header']})"
        if hname != f["header"]:
            err(f"{where}: listed under {hname} in abi/api.json")
        for k in set(e) - FN_KEYS:
            err(f"{where}: unknown key {k!r}")
        params = f["params"]
        names = [p["name"] for p in params]
        if e.get("params") != names:
            err(f"{where}: parameters are ({', '.join(names)}) in the header, "
                f"({', '.join(e.get('params') or [])}) in abi/api.json")
        check_outputs(where, e, params, man, mf)
        check_cancel(where, e, params, hdrs)
        check_returns(where, e, f, params)
        if "frees" in e:
            t = e["frees"]
            if t in ("buffer", "options"):
                if [p["type"] for p in params] != ["void *"]:
                    err(f"{where}: frees {t} but does not take one void *")
            else:
                h = man["handles"].get(t)
                if [p["type"] for p in params] != [f"{t} *"]:
                    err(f"{where}: frees {t} but takes ({', '.join(p['type'] for p in params)})")
                if not h or h.get("free") != name:
                    err(f"{where}: frees {t}, whose handle entry names another free function")
        elif name.endswith("_free") and f["returns"] == "void":
            err(f"{where}: looks like a free function but has no \"frees\"")
        cb = e.get("callbacks")
        if cb is not None:
            if cb.get("thread") not in THREADS:
                err(f"{where}: callbacks.thread must be one of {sorted(THREADS)}")
            if cb.get("from") not in FROM:
                err(f"{where}: callbacks.from must be one of {sorted(FROM)}")
            if cb.get("from") == "params" and not any(p["type"] in hdrs.callbacks for p in params):
                err(f"{where}: callbacks from params, but it takes no callback")
        elif any(p["type"] in hdrs.callbacks for p in params):
            err(f"{where}: takes a callback but has no \"callbacks\" entry")


OUT_TYPES = {"bytes": "char **", "string": "char **", "chars": "char *", "int": "int *",
             "length": "size_t *", "options": "void **", "view": "const char **"}


def check_outputs(where, e, params, man, mf):
    outs = e.get("out", [])
    pos = 0
    for o in outs:
        for k in set(o) - OUT_KEYS:
            err(f"{where}: output {o.get('param')}: unknown key {k!r}")
        if pos >= len(params) or params[pos]["name"] != o.get("param"):
            err(f"{where}: output {o.get('param')!r} is not parameter {pos + 1}: outputs come "
                "first, in order (docs/abi.md)")
            return
        t = params[pos]["type"]
        kind = o.get("kind")
        if kind == "handle":
            if t != f"{o.get('type')} **":
                err(f"{where}: output {o['param']} is {t}, described as {o.get('type')} **")
            h = man["handles"].get(o.get("type"))
            if not h:
                err(f"{where}: output type {o.get('type')} is not a described handle")
            elif o.get("free") != h.get("free") and not o.get("owner"):
                err(f"{where}: output {o['param']} is freed with {o.get('free')}, "
                    f"the handle {o['type']} with {h.get('free')}")
        elif kind in OUT_TYPES:
            if t != OUT_TYPES[kind]:
                err(f"{where}: output {o['param']} ({kind}) is {t}, expected {OUT_TYPES[kind]}")
        else:
            err(f"{where}: output {o.get('param')}: unknown kind {kind!r}")
        if o.get("free") and o["free"] not in mf:
            err(f"{where}: output {o['param']}: free function {o['free']} does not exist")
        if kind == "view" and not o.get("owner"):
            err(f"{where}: output {o['param']}: a view needs its owner")
        if o.get("owner") and o["owner"] not in [p["name"] for p in params]:
            err(f"{where}: output {o['param']}: owner {o['owner']} is not a parameter")
        if kind == "handle" and not o.get("free") and not o.get("owner"):
            err(f"{where}: output {o['param']}: neither a free function nor an owner")
        pos += 1
        extra = {"bytes": "length", "view": "length", "chars": "size"}.get(kind)
        if extra:
            if pos >= len(params) or params[pos]["name"] != o.get(extra):
                err(f"{where}: output {o['param']}: its {extra} parameter "
                    f"{o.get(extra)!r} must follow it")
            else:
                pos += 1
    # Nothing after the outputs may look like one.
    for p in params[pos:]:
        if re.match(r"^(asb_\w+|char) \*\*$", p["type"]) or (p["type"] == "char *" and
                                                               p["name"] == "buf"):
            if not e.get("length"):
                err(f"{where}: parameter {p['name']} ({p['type']}) looks like an output but is "
                    "not described as one (outputs come first)")


def check_cancel(where, e, params, hdrs):
    c = e.get("cancel")
    by_name = {p["name"]: p for p in params}
    carriers = []
    for p in params:
        m = re.match(r"^const (asb_\w+) \*$", p["type"])
        if m and any(x["name"] == "cancel" and x["type"] == "asb_cancel *"
                     for x in hdrs.structs.get(m.group(1), [])):
            carriers.append(p["name"])
    if c is None:
        if carriers:
            err(f"{where}: takes a cancel token in {carriers[0]} but has no \"cancel\"")
        return
    if c not in by_name:
        err(f"{where}: cancel parameter {c!r} does not exist")
    elif c not in carriers:
        err(f"{where}: cancel parameter {c!r} is not an options struct with a cancel member")
    if not e.get("blocking"):
        err(f"{where}: cancellable but not blocking")


def check_returns(where, e, f, params):
    r = e.get("returns")
    ptr = f["returns"].endswith("*")
    if ptr and r not in RETURNS:
        err(f"{where}: returns {f['returns']}: say whose it is (\"returns\": one of "
            f"{sorted(RETURNS)})")
    if not ptr and r is not None:
        err(f"{where}: returns {f['returns']}, no pointer, but \"returns\" is {r!r}")
    if e.get("length") and e["length"] not in [p["name"] for p in params]:
        err(f"{where}: length parameter {e['length']!r} does not exist")


def check_handles(man, hdrs):
    types_h = hdrs.headers.get("types.h")
    declared = (types_h.handles if types_h else set()) - {"asb_call_options"}
    for h in sorted(hdrs.handles - declared - {"asb_call_options"}):
        err(f"{h}: a handle typedef outside types.h")
    for h in sorted(declared - set(man["handles"])):
        err(f"{h}: a handle in types.h, missing from abi/api.json")
    for h, e in man["handles"].items():
        for k in set(e) - HANDLE_KEYS:
            err(f"handle {h}: unknown key {k!r}")
        if h not in declared:
            err(f"handle {h}: in abi/api.json, not in types.h")
        if e.get("header") not in hdrs.headers:
            err(f"handle {h}: header {e.get('header')!r} does not exist")
        if e.get("free"):
            f = hdrs.functions.get(e["free"])
            if not f or [p["type"] for p in f["params"]] != [f"{h} *"]:
                err(f"handle {h}: free function {e['free']} does not take one {h} *")
        elif not e.get("owner"):
            err(f"handle {h}: neither a free function nor an owner")
        if e.get("owner") and e["owner"] not in man["handles"]:
            err(f"handle {h}: owner {e['owner']} is not a handle")


def check_options(man, hdrs):
    mo = asbapi.manifest_options(man)
    for hname, h in hdrs.headers.items():
        for s in h.structs:
            if s.endswith("_options") and s not in mo:
                err(f"{s} ({hname}): an options struct missing from abi/api.json")
    for name, (hname, o) in mo.items():
        where = f"{name} ({hname})"
        for k in set(o) - OPT_KEYS:
            err(f"{where}: unknown key {k!r}")
        h = hdrs.headers.get(hname)
        if not h or name not in h.structs:
            err(f"{where}: no such struct in {hname}")
            continue
        members = {m["name"]: m["type"] for m in h.structs[name]}
        if list(members)[:1] != ["version"] or members["version"] != "unsigned int":
            err(f"{where}: the first member must be unsigned int version")
        for key in ("version", "init_macro"):
            if o.get(key) not in hdrs.macros:
                err(f"{where}: macro {o.get(key)} is not defined")
        if o.get("init_macro") in hdrs.macros and \
                not hdrs.macros[o["init_macro"]].lstrip("{ ").startswith(o.get("version", "?")):
            err(f"{where}: {o['init_macro']} does not start with {o.get('version')}")
        init = hdrs.functions.get(o.get("init"))
        if not init or [p["type"] for p in init["params"]] != [f"{name} *", "unsigned int"]:
            err(f"{where}: init function {o.get('init')} ({name} *, unsigned int) is missing")
        for key, ctype in (("strings", "const char *"), ("arrays", "const char *const *")):
            want = [m for m, t in members.items() if t == ctype]
            if sorted(o.get(key, [])) != sorted(want):
                err(f"{where}: {key} are {want} in the struct, {o.get(key, [])} in abi/api.json")
        want_bytes = sorted(m for m, t in members.items() if t == "const void *")
        got_bytes = o.get("bytes", [])
        if sorted(b.get("data") for b in got_bytes) != want_bytes:
            err(f"{where}: byte buffers (const void *) are {want_bytes}, "
                f"{[b.get('data') for b in got_bytes]} described")
        for b in got_bytes:
            if members.get(b.get("length")) != "size_t":
                err(f"{where}: the length {b.get('length')!r} of {b.get('data')} is no size_t "
                    "member")
        for m, v in o.get("since", {}).items():
            if m not in members:
                err(f"{where}: since names {m!r}, which is no member")
            elif not isinstance(v, int) or v < 2:
                err(f"{where}: since.{m} must be the version (2, 3, ...) that added it")
        version = hdrs.macros.get(o.get("version"), "")
        if o.get("since") and version.isdigit() and max(o["since"].values()) > int(version):
            err(f"{where}: a member is newer than {o['version']} ({version})")
        want_cb = {m: t for m, t in members.items() if t in hdrs.callbacks}
        if o.get("callbacks", {}) != want_cb:
            err(f"{where}: callback members are {want_cb}, {o.get('callbacks', {})} described")
        if want_cb and members.get(o.get("userdata")) != "void *":
            err(f"{where}: callbacks without a void * userdata member named in \"userdata\"")
        has_cancel = members.get("cancel") == "asb_cancel *"
        if has_cancel != (o.get("cancel") == "cancel"):
            err(f"{where}: the cancel member and \"cancel\" disagree")


def check_callbacks(man, hdrs):
    for n in sorted(set(hdrs.callbacks) - set(man["callbacks"])):
        err(f"callback type {n}: in the headers, missing from abi/api.json")
    for n in sorted(set(man["callbacks"]) - set(hdrs.callbacks)):
        err(f"callback type {n}: in abi/api.json, not in the headers")
    for n, c in hdrs.callbacks.items():
        if c["params"] and c["params"][-1] != {"type": "void *", "name": "userdata"}:
            err(f"callback type {n}: userdata must be its last parameter")


def check_libraries(man, hdrs):
    listed = set()
    for lib, e in man["libraries"].items():
        listed |= set(e["headers"])
    for h in sorted(set(hdrs.headers) - listed):
        err(f"{h}: a public header in no library of abi/api.json")
    for h in sorted(set(man["headers"]) - set(hdrs.headers)):
        err(f"abi/api.json describes {h}, which does not exist")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=asbapi.ROOT)
    a = ap.parse_args()
    try:
        hdrs = asbapi.Headers(a.root)
    except asbapi.HeaderError as e:
        sys.exit(f"abi.description: {e}")
    man = asbapi.load_manifest(a.root)
    check_libraries(man, hdrs)
    check_functions(man, hdrs)
    check_handles(man, hdrs)
    check_options(man, hdrs)
    check_callbacks(man, hdrs)
    if not errors:
        gen = os.path.join(a.root, "scripts", "gen-bindings.py")
        r = subprocess.run([sys.executable, gen, "--check", "--root", a.root],
                           capture_output=True, text=True)
        if r.returncode:
            err(r.stderr.strip() or r.stdout.strip())
    for e in errors:
        print("abi.description:", e, file=sys.stderr)
    if errors:
        print(f"abi.description: {len(errors)} problem(s); the format is in docs/abi.md",
              file=sys.stderr)
        sys.exit(1)
    print(f"abi.description: {len(hdrs.functions)} functions, {len(man['handles'])} handles, "
          f"{len(asbapi.manifest_options(man))} options structs agree")


if __name__ == "__main__":
    main()
