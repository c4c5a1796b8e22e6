"""python -m agent_sandbox.mcp execs the C server (no second
implementation): it finds the binary next to the library the binding
loaded (or $ASB_MCP_BIN), and the server it starts speaks MCP with the
binding's configuration (here only ASB_STATE_DIR) to a real engine.
SPDX-License-Identifier: Apache-2.0"""

import json
import os
import subprocess
import sys
from pathlib import Path

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "pytest", "version": "1"}}}


def launcher(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "agent_sandbox.mcp", *args],
                          env=env, capture_output=True, text=True, timeout=120, **kw)


def test_which_finds_the_build_trees_binary():
    r = launcher("--which")
    assert r.returncode == 0, r.stderr
    found = Path(r.stdout.strip())
    assert found.name == "agent-sandbox-mcp" and os.access(found, os.X_OK)
    build = os.environ.get("ASB_BUILD_DIR")
    if build:
        assert found == Path(build) / "core" / "mcp" / "agent-sandbox-mcp"


def test_asb_mcp_bin_wins_and_a_missing_one_is_an_error(tmp_path):
    real = Path(launcher("--which").stdout.strip())
    env = dict(os.environ, ASB_MCP_BIN=str(real))
    assert launcher("--which", env=env).stdout.strip() == str(real)
    env["ASB_MCP_BIN"] = str(tmp_path / "nope")
    r = launcher("--which", env=env)
    assert r.returncode == 127 and "ASB_MCP_BIN" in r.stderr


def test_arguments_pass_through():
    r = launcher("--version")
    assert r.returncode == 0 and r.stdout.startswith("agent-sandbox-mcp ")


def test_the_launched_server_runs_a_command(engine):
    p = subprocess.Popen([sys.executable, "-m", "agent_sandbox.mcp"], env=engine.env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        def ask(msg):
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()
            for line in p.stdout:  # notifications (log messages) come first
                m = json.loads(line)
                if m.get("id") == msg["id"]:
                    return m
            raise AssertionError("the server closed stdout")

        assert ask(INIT)["result"]["serverInfo"]["name"] == "agent-sandbox-mcp"
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        r = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "run_command", "arguments": {"command": "echo from python"}}})
        out = r["result"]["structuredContent"]
        assert out["stdout"] == "from python\n" and out["exit_code"] == 0
        p.stdin.close()
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
