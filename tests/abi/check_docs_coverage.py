#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""docs.coverage: fail when a public function has no entry in the reference
docs (curl's test1139 idea). Each function of include/agentsandbox/<h>.h
must be named in full, as a word, on its header's page
docs/reference/<h>.md (common.h and types.h share types.md); a reference
page that names a function no header declares fails too, so pages do not
keep describing what was removed or renamed.

usage: check_docs_coverage.py [--root DIR]"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import asbapi  # noqa: E402

PAGE = {"common.h": "types.md", "types.h": "types.md"}
# Names on reference pages that are not functions of ours.
NOT_FUNCTIONS = re.compile(r"^asb_(x|int64|status|error|\w+_(options|fn|type))$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=asbapi.ROOT)
    a = ap.parse_args()
    hdrs = asbapi.Headers(a.root)
    ref = os.path.join(a.root, "docs", "reference")
    pages = {}
    for f in sorted(os.listdir(ref)):
        if f.endswith(".md"):
            pages[f] = open(os.path.join(ref, f)).read()
    errors = []
    for name, f in sorted(hdrs.functions.items()):
        page = PAGE.get(f["header"], f["header"][:-2] + ".md")
        text = pages.get(page)
        if text is None:
            errors.append(f"{name} ({f['header']}): no reference page docs/reference/{page}")
        elif not re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text):
            errors.append(f"{name} ({f['header']}): not named on docs/reference/{page}")
    known = set(hdrs.functions) | hdrs.handles | set(hdrs.structs) | set(hdrs.callbacks)
    for page, text in pages.items():
        for n in sorted(set(re.findall(r"\basb_[a-z0-9_]+\b", text))):
            if n in known or NOT_FUNCTIONS.match(n) or n.endswith("_"):
                continue
            if re.search(r"\b" + n + r"\(", text):
                errors.append(f"docs/reference/{page}: names {n}(), which no header declares")
    for e in errors:
        print("docs.coverage:", e, file=sys.stderr)
    if errors:
        print(f"docs.coverage: {len(errors)} problem(s)", file=sys.stderr)
        sys.exit(1)
    print(f"docs.coverage: {len(hdrs.functions)} functions, each on its reference page")


if __name__ == "__main__":
    main()
