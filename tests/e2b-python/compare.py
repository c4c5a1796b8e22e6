"""compare.py RESULTS EXPECTED [--all]: checks tests/e2b-python/run.sh's
outcomes (RESULTS: ``<pass|fail|skip> <node id>`` lines, the
asb_e2b_outcomes plugin's) against EXPECTED (expected-failures.txt:
``<node id>  # why`` lines). Every test must pass or be skipped except
the listed ones; a listed test that passes fails the check, and (--all: a
run of the whole suite) so does a listed one that did not run, so the list
stays true. Prints the counts and each expected failure; exit 1 on any
mismatch. SPDX-License-Identifier: Apache-2.0"""

import re
import sys


def main(argv):
    results_path, expected_path = argv[1], argv[2]
    check_not_run = "--all" in argv[3:]
    results = []
    with open(results_path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                st, _, nodeid = line.partition(" ")
                results.append((st, nodeid))
    listed = []
    with open(expected_path, encoding="utf-8") as f:
        for line in f:
            line = re.sub(r"\s+#.*$", "", line.rstrip("\n"))
            if line.strip() and not line.startswith("#"):
                listed.append(line.strip())
    listed_set = set(listed)
    counts = {"pass": 0, "fail": 0, "skip": 0}
    status = 0
    for st, nodeid in results:
        counts[st] = counts.get(st, 0) + 1
        if st == "fail" and nodeid not in listed_set:
            print(f"  UNEXPECTED FAILURE: {nodeid}")
            status = 1
        elif st == "pass" and nodeid in listed_set:
            print(f"  PASSES BUT LISTED AS EXPECTED FAILURE: {nodeid}")
            status = 1
    if check_not_run:
        seen = {nodeid for _, nodeid in results}
        for nodeid in listed:
            if nodeid not in seen:
                print(f"  LISTED BUT NOT RUN: {nodeid}")
                status = 1
    n_expected = sum(1 for st, nodeid in results if st == "fail" and nodeid in listed_set)
    print(f"E2B Python SDK suite: {counts['pass']} passed, {counts['fail']} failed "
          f"({n_expected} expected), {counts['skip']} skipped (of {len(results)})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
