#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""abi.bindings_coverage: fail when a public function of libagentsandbox or
libagentsandbox-server is neither bound by a binding nor listed as
deliberately unbound in that binding's bindings/<lang>/unbound.txt.

Every directory bindings/<lang>/ with an unbound.txt is a binding. A
function is bound when the binding's own sources name it outside comments
(any file under bindings/<lang>/ but build output; Python's agent_sandbox
calls lowlevel.asb_x, its shims call asb_x in C, server.py names the server
SDK's functions for ctypes; a Node-API addon calls them in C). A binding
built on the shared SWIG interface (it has bindings/<lang>/asb_<lang>.i)
also binds what bindings/gen/asb_api.i binds for it: the options structs'
init functions (their constructors) and the free functions of owned
handles (their destructors).

A hand-written Node-API addon (bindings/<lang>/src/bound.h) binds what its
C sources call: its JavaScript cannot call C, so only src/*.c and src/*.h
count. bound.h lists each client-library function the addon calls with the
thread it runs on (X(asb_x, ANODE_W) workers, ANODE_L the event loop,
ANODE_B both); the check fails when a C source calls a client function
bound.h does not list (or lists one no source calls), and when a function
abi/api.json marks blocking is not ANODE_W. (The addon's abiCheck() makes
the same comparison at run time against bindings/gen/api_table.h.)

unbound.txt: one function per line, then its reason ("asb_free  wrappers
free buffers themselves"); '#' starts a comment. A name there that is no
public function, or that the binding binds after all, fails too, so the
list stays true. For a SWIG binding, a client-library function its
scripting-language files call through the generated module must be wrapped
(its header %included by bindings/agentsandbox.i, not %ignored): a binding
cannot use what it does not wrap.

usage: check_bindings_coverage.py [--root DIR]"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import asbapi  # noqa: E402

SKIP_DIRS = {"build", "dist", "__pycache__", "node_modules", "swig", "gen"}
GENERATED = re.compile(r"(^lowlevel\.py$|_wrap\.c$|\.so$|\.pyc$)")
C_LIKE = (".c", ".h", ".i", ".cc", ".cpp", ".js", ".mjs", ".ts")
HASH = (".py", ".lua", ".txt", ".toml", ".cfg", ".sh")


def strip_comments(path, text):
    if path.endswith(C_LIKE):
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
    if path.endswith(".lua"):
        text = re.sub(r"--\[\[.*?\]\]", " ", text, flags=re.S)
        text = re.sub(r"--[^\n]*", " ", text)
    elif path.endswith(HASH):
        text = re.sub(r"#[^\n]*", " ", text)
    return text


def sources(bdir):
    for root, dirs, files in os.walk(bdir):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for f in sorted(files):
            if f == "unbound.txt" or GENERATED.search(f):
                continue
            p = os.path.join(root, f)
            try:
                yield p, open(p, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue


def read_unbound(path):
    out, problems = {}, []
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            problems.append(f"{path}:{n}: {name}: give the reason it is not bound")
        out[name] = n
    return out, problems


def swig_wrapped(root, hdrs):
    """Client functions the shared SWIG interface wraps."""
    text = open(os.path.join(root, "bindings", "agentsandbox.i")).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    included = set(re.findall(r'%include\s+"agentsandbox/(\w+\.h)"', text))
    ignored = set(re.findall(r"%ignore\s+(asb_\w+)\s*;", text))
    return {n for n, f in hdrs.functions.items() if f["header"] in included and n not in ignored}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=asbapi.ROOT)
    a = ap.parse_args()
    hdrs = asbapi.Headers(a.root)
    man = asbapi.load_manifest(a.root)
    public = set(hdrs.functions)
    client = {n for n, f in hdrs.functions.items() if f["lib"] == "agentsandbox"}
    shared = {o["init"] for _, (h, o) in asbapi.manifest_options(man).items()}
    shared |= {h["free"] for h in man["handles"].values() if h.get("free") and not h.get("explicit")}
    wrapped = swig_wrapped(a.root, hdrs)
    fdesc = {n: f for n, (h, f) in asbapi.manifest_functions(man).items()}

    errors = []
    bindings = sorted(d for d in os.listdir(os.path.join(a.root, "bindings"))
                      if os.path.isfile(os.path.join(a.root, "bindings", d, "unbound.txt")))
    if not bindings:
        errors.append("no binding has a bindings/<lang>/unbound.txt")
    for lang in bindings:
        bdir = os.path.join(a.root, "bindings", lang)
        uses_swig = os.path.isfile(os.path.join(bdir, f"asb_{lang}.i"))
        unbound, problems = read_unbound(os.path.join(bdir, "unbound.txt"))
        errors += problems
        bound, through_module = set(), set()
        bound_h = os.path.join(bdir, "src", "bound.h")
        addon = not uses_swig and os.path.isfile(bound_h)
        client_calls = set()
        for path, text in sources(bdir):
            if addon and not (path.startswith(os.path.join(bdir, "src") + os.sep) and path.endswith((".c", ".h"))):
                continue
            code = strip_comments(path, text)
            if addon and not path.endswith(("bound.h", "server.c")):
                client_calls |= set(re.findall(r"\b(asb_[a-z0-9_]+)\s*\(", code)) & client
            names = set(re.findall(r"\b(asb_[a-z0-9_]+)\b", code)) & public
            bound |= names
            if uses_swig and not path.endswith(C_LIKE):
                # Names reached through the generated module (lowlevel.asb_x).
                through_module |= set(re.findall(r"\.\s*(asb_[a-z0-9_]+)\b", code)) & client
        if addon:
            listed = dict(re.findall(r"^X\((asb_[a-z0-9_]+),\s*(ANODE_[WLB])\)", open(bound_h).read(), re.M))
            for n in sorted(client_calls - set(listed)):
                errors.append(f"{lang}: src/bound.h does not list {n}, which the addon calls")
            for n in sorted(set(listed) - client_calls):
                errors.append(f"{lang}: src/bound.h lists {n}, which no source of the addon calls")
            for n, where in sorted(listed.items()):
                f = hdrs.functions.get(n)
                if f is None:
                    errors.append(f"{lang}: src/bound.h: {n} is not a public function")
                    continue
                blocking = fdesc.get(n, {}).get("blocking")
                if blocking and where != "ANODE_W":
                    errors.append(f"{lang}: src/bound.h: {n} blocks (abi/api.json) but is called on the event loop ({where})")
        if uses_swig:
            bound |= shared & public
            for n in sorted(through_module - wrapped):
                errors.append(f"{lang}: calls {n} through the SWIG module, which does not wrap "
                              f"it (%include {hdrs.functions[n]['header']} in "
                              "bindings/agentsandbox.i, or do not %ignore it)")
        for n in sorted(public - bound - set(unbound)):
            errors.append(f"{lang}: {n} ({hdrs.functions[n]['header']}) is neither bound nor "
                          f"listed in bindings/{lang}/unbound.txt")
        for n in sorted(set(unbound) - public):
            errors.append(f"{lang}: bindings/{lang}/unbound.txt:{unbound[n]}: {n} is not a "
                          "public function")
        for n in sorted(set(unbound) & bound):
            errors.append(f"{lang}: bindings/{lang}/unbound.txt:{unbound[n]}: {n} is bound after "
                          "all: drop it from the list")
        if not errors:
            print(f"abi.bindings_coverage: {lang}: {len(bound & public)} of {len(public)} "
                  f"functions bound, {len(unbound)} deliberately not")
    for e in errors:
        print("abi.bindings_coverage:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
