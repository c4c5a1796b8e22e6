"""Every example under examples/python runs to completion against a real
engine, configured the way users run them (nothing but ASB_STATE_DIR).
SPDX-License-Identifier: Apache-2.0"""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


def run(engine, name, *args):
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], env=engine.env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_commands(engine):
    out = run(engine, "commands.py")
    assert "hi from /tmp" in out and "SHOUT" in out and "hello Alice" in out and "cancelled" in out


def test_git(engine):
    out = run(engine, "git.py")
    assert "('NOTES.md', 'untracked')" in out and "pulled: notes" in out
    assert "branches ['feature', 'main'] on feature" in out and "no upstream yet" in out


def test_files(engine):
    out = run(engine, "files.py")
    assert "streamed 4194304 bytes" in out and "event create done" in out


def test_pty(engine):
    assert run(engine, "pty.py").strip() == "True True"


def test_lifecycle(engine):
    out = run(engine, "lifecycle.py")
    assert "paused True False" in out and "running True" in out and "killed True False" in out
    assert "memory RAM kept (no --pause-swap)" in out


def test_checkpoint(engine):
    # no --pause-criu here: the RAM kept (test_examples_criu.py: with it)
    out = run(engine, "checkpoint.py")
    assert "paused: paused pause mode memory\n" in out
    assert out.endswith(": the same process counts on\n")


def test_sandbox_to_sandbox(engine):
    out = run(engine, "sandbox_to_sandbox.py").splitlines()
    assert out[0].startswith("A serves http://8080-") and ".localhost:" in out[0]
    assert out[1] == "resolves to ['127.0.0.1', '::1']"
    assert out[2:] == ["http hello from sandbox A", "https hello from sandbox A"]


def test_sessions(engine):
    assert "saved" in run(engine, "sessions.py")
    assert "reconnected: written by the first run" in run(engine, "sessions.py")
    assert "session closed" in run(engine, "sessions.py", "done")


def test_decorator(engine):
    out = run(engine, "decorator.py")
    assert "[1, 3, 6]" in out and "remote error: division by zero" in out


def test_sync_api(engine):
    assert run(engine, "sync_api.py").split("\n")[:2] == ["blocking", "y"]


def test_e2b_compat(engine):
    assert "hello from an E2B program" in run(engine, "e2b_compat.py")


def test_code(engine, code_sandbox):
    out = run(engine, "code.py")
    assert out.startswith("1024\n42\nZeroDivisionError")


def test_named_commands(engine):
    out = run(engine, "named_commands.py").splitlines()
    assert out[0] == "hello(name: string = 'world') - Greets someone."
    assert out[1] == "Hello, Alice!"
    assert "Unknown command 'goodbye'; available: hello" in out[2]
    assert "unexpected argument 'nme'" in out[3]
    assert out[4] == "word_count: {'total': 6, 'common': [['a', 3], ['b', 2], ['c', 1]]}"
    assert out[5] == "mean: 2.5"
    assert out[6].startswith("remote ValueError:") and out[6].endswith("no values")


def test_templates(engine):
    out = run(engine, "templates.py").splitlines()
    assert out[0].startswith("py-example built ")
    assert out[1] == "hello from a template"
    assert out[2] == "listed: True"
    assert out[3].startswith("build failed:") and "exit code 3" in out[3]


def test_e2b_template(engine):
    out = run(engine, "e2b_template.py").splitlines()
    assert out[0] == "built py-e2b-builder-example:v1: tags ['v1'], exists: True"
    assert out[1] == ("the start command's server says: hello from a template built with "
                      "E2B's Python builder")
    assert out[2].startswith("build failed at e2b_template.py:46: ") and "exit code 3" in out[2]


def test_e2b_charts(engine):
    out = run(engine, "e2b_charts.py").splitlines()
    assert out[0] == "chart: Fruit kg [('apples', '2024', 3.0), ('pears', '2024', 5.0)] png"
    assert out[1] == "data: {'n': [1, 2], 'sq': [1, 4]}"
    assert out[2] == "image: 1 png"


@pytest.mark.skipif(not Path("/usr/bin/java").exists(), reason="no JDK (openjdk-17-jdk-headless)")
def test_e2b_java(engine):
    out = run(engine, "e2b_java.py").splitlines()
    assert out == ["stdout: points: [Point[x=3, y=4]]", "result: 5.0", "envs: hello, 1",
                   "error: java.lang.IndexOutOfBoundsException | Index 5 out of bounds for length 1"]


@pytest.mark.skipif(not Path("/usr/local/lib/agent-sandbox/agents/bin/codex").exists(),
                    reason="no codex in the host-wide prefix (scripts/agents-cache.sh)")
def test_agents(engine):
    out = run(engine, "agents.py").splitlines()
    assert out[0].startswith("codex: @openai/codex ") and out[0].endswith("(installed)")
    assert any("tool.started:" in line and "echo hi > /tmp/x" in line for line in out), out
    assert "turn 1: completed, final message 'done'" in out
    assert "/tmp/x: hi" in out
    assert out[-1] == "turn 2: recall: yes"



def test_volumes(engine):
    out = run(engine, "volumes.py")
    assert out.startswith("from python\nfrom the sandbox\n") and "file 0o644 1000 /log.txt" in out
    assert "mounted at ['/mnt/data']\n" in out and "\ne2b names\n" in out
    assert out.endswith("True True\nTrue\n")


def test_e2b_secrets(engine):
    out = run(engine, "e2b_secrets.py")
    assert "version 1 {'owner': 'examples'}" in out and "rotated to version 2" in out
    assert "listed True" in out and "rule Bearer ${e2b.secrets.example-key-" in out
    assert "value in the sandbox: False" in out and "destroyed True exists False" in out


def test_mcp_gateway(engine):
    out = run(engine, "mcp_gateway.py")
    assert "hello, MCP" in out and "user in /home/user" in out
    assert "'hello.greet'" in out and "'sandbox.run_command'" in out
