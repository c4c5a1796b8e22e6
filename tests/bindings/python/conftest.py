"""pytest fixtures: a real agent-sandboxd per test run (own state dir, free
loopback port, own cgroup name, --kill-on-exit), found by the library the
way users' programs find it: only ASB_STATE_DIR is set.

Environment: ASB_ENGINE_BIN (default: <repo>/build/core/engine/agent-sandboxd).
Runs as root (the engine needs it).
SPDX-License-Identifier: Apache-2.0
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ENGINE_BIN = os.environ.get("ASB_ENGINE_BIN", str(REPO / "build" / "core" / "engine" / "agent-sandboxd"))

_CONFIG_VARS = ("API_KEY", "API_URL", "DOMAIN", "SANDBOX_URL", "DEBUG")


def _die_with_parent() -> None:
    """In the engine's child before exec: SIGTERM when pytest dies (a crash,
    a ctest timeout), so --kill-on-exit still kills its sandboxes."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Engine:
    def __init__(self, tag: str, extra: tuple = ()) -> None:
        """extra: more engine options (e.g. ("--pause-swap", "64M"))."""
        self.state = tempfile.mkdtemp(prefix=f"asb-py-{tag}-")
        self.cgroup = f"asbpy-{tag}-{os.getpid()}"
        self.proc = subprocess.Popen(
            [ENGINE_BIN, "--state-dir", self.state, "--listen", "127.0.0.1:0",
             "--cgroup-name", self.cgroup, "--pool", "2", "--kill-on-exit", *extra],
            stdout=subprocess.PIPE, stderr=open(self.state + ".log", "w"), text=True,
            preexec_fn=_die_with_parent)
        self.port = 0
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("listening on"):
                self.port = int(line.rsplit(":", 1)[1])
                break
        if not self.port:
            self.proc.kill()
            raise RuntimeError("the engine did not start")
        self.url = f"http://127.0.0.1:{self.port}"
        self.key = Path(self.state, "api_key").read_text().strip()

    def env(self) -> dict:
        """The environment a user's program needs: just ASB_STATE_DIR."""
        env = {k: v for k, v in os.environ.items()
               if not any(k in (f"ASB_{n}", f"E2B_{n}") for n in _CONFIG_VARS)}
        env["ASB_STATE_DIR"] = self.state
        env["ASB_SESSION_DIR"] = os.path.join(self.state, "sessions")
        return env

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(300)  # it kills every sandbox first
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)
        if not os.environ.get("ASB_TEST_KEEP_LOGS"):
            try:
                os.remove(self.state + ".log")
            except OSError:
                pass


def start_engine(extra: tuple = ()) -> Engine:
    """The run's engine (extra: more options), the environment pointed at it."""
    if os.geteuid() != 0:
        pytest.skip("the engine needs root")
    if not os.access(ENGINE_BIN, os.X_OK):
        pytest.skip(f"no engine at {ENGINE_BIN}")
    tag = Path(sys.argv[-1]).stem.replace("test_", "")[:12] if sys.argv else "py"
    e = Engine(tag, extra)
    os.environ.update(e.env())
    for n in _CONFIG_VARS:
        os.environ.pop(f"ASB_{n}", None)
        os.environ.pop(f"E2B_{n}", None)
    return e


@pytest.fixture(scope="session")
def engine():
    e = start_engine()
    yield e
    e.stop()


@pytest.fixture(scope="session")
def sandbox(engine):
    """One sandbox shared by a test file's tests (async flavour; each test
    awaits on its own loop, which is fine: the object is not bound to one)."""
    from agent_sandbox import Sandbox

    sb = Sandbox.create_sync(timeout=600)
    yield sb
    sb.kill_sync()


@pytest.fixture(scope="session")
def sync_sandbox(sandbox):
    """The blocking flavour of the shared sandbox."""
    return sandbox.sync


def eventually(fn, timeout: float = 120.0, interval: float = 0.05):
    """Poll fn until it returns a true value (no timing assertions: the
    deadline only stops a test that would otherwise hang)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            return v
        time.sleep(interval)


@pytest.fixture(scope="session")
def code_sandbox(sandbox):
    """The shared sandbox, its code interpreter warmed up (any template
    starts it on the first request to port 49999)."""
    sandbox.run_code_sync("1", timeout=120)
    return sandbox


def build_template(engine, directory):
    """Build a template directory with the asb CLI (a real build in the
    test's engine); returns its name."""
    asb = REPO / "build" / "core" / "cli" / "asb"
    r = subprocess.run([str(asb), "template", "build", str(directory)], env=engine.env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"asb template build {directory}:\n{r.stdout}\n{r.stderr}"
    return Path(directory).name


def delete_template(engine, name):
    asb = REPO / "build" / "core" / "cli" / "asb"
    subprocess.run([str(asb), "template", "delete", name], env=engine.env(),
                   capture_output=True, text=True, timeout=120)
