"""examples/python/checkpoint.py against an engine of this file's own with
--pause-criu (docs/lifecycle.md): pause_mode "checkpoint", and the restored
process counts on (test_examples.py runs it without the option); and
fork_processes.py (docs/snapshots.md): the fork's counter is the parent's
process counting on, its fork_mode "processes", and fork_many with
keep_processes=False gives two forks of fork_mode "files". Skips only
when no criu binary is found ($ASB_CRIU, else scripts/build-criu.sh's).
SPDX-License-Identifier: Apache-2.0"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import start_engine

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "checkpoint.py"

CRIU = os.environ.get("ASB_CRIU") or "/var/cache/agent-sandbox/criu/bin/criu"


@pytest.fixture(scope="module")
def criu_engine():
    if not os.access(CRIU, os.X_OK):
        pytest.skip(f"no criu at {CRIU} (scripts/build-criu.sh builds it)")
    e = start_engine(("--pause-criu", "--criu", CRIU))
    yield e
    e.stop()


def test_checkpoint_with_criu(criu_engine):
    r = subprocess.run([sys.executable, str(EXAMPLE)], env=criu_engine.env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"checkpoint.py failed:\n{r.stdout}\n{r.stderr}"
    out = r.stdout
    assert "paused: paused pause mode checkpoint\n" in out
    assert out.endswith(": the same process counts on\n")



FORK = EXAMPLE.parent / "fork_processes.py"


def test_fork_keeps_processes_with_criu(criu_engine):
    r = subprocess.run([sys.executable, str(FORK)], env=criu_engine.env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"fork_processes.py failed:\n{r.stdout}\n{r.stderr}"
    assert ": the parent's process counts on in the fork\n" in r.stdout
    assert ": counts on\n" in r.stdout
    # the fork options (issue 20): the fork's mode; keep_processes=False
    # and fork_many give two booted fresh
    assert "fork: fork mode processes\n" in r.stdout
    assert r.stdout.count("fresh fork: fork mode files\n") == 2
