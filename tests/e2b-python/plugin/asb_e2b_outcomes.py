"""A pytest plugin for tests/e2b-python/run.sh (``-p asb_e2b_outcomes``):
one line per test of E2B's suite, ``<pass|fail|skip> <node id>``, into the
file ``ASB_E2B_RESULTS`` names, for compare.py to check against
expected-failures.txt. A test fails if any of its phases (setup, call,
teardown) failed; a module that could not be collected is one failure under
its path. SPDX-License-Identifier: Apache-2.0"""

import os

_outcomes = {}  # node id -> "pass" | "fail" | "skip", in the order seen


def _set(nodeid, outcome):
    prev = _outcomes.get(nodeid)
    if prev == "fail":
        return
    if prev == "skip" and outcome == "pass":
        return
    _outcomes[nodeid] = outcome


def pytest_collectreport(report):
    if report.failed:
        _set(report.nodeid, "fail")


def pytest_runtest_logreport(report):
    if report.failed:
        _set(report.nodeid, "fail")
    elif report.skipped:
        _set(report.nodeid, "skip")
    elif report.when == "call":
        _set(report.nodeid, "pass")


def pytest_sessionfinish(session):
    path = os.environ.get("ASB_E2B_RESULTS")
    if not path:
        return
    with open(path, "w", encoding="utf-8") as f:
        for nodeid, outcome in _outcomes.items():
            f.write(f"{outcome} {nodeid}\n")
