"""sandbox.agents end to end: a real coding-agent CLI (Codex, from the
host-wide prefix scripts/agents-cache.sh fills) in a real sandbox of the
built-in agents template, driven through the Python binding, against
tests/agents/scripted_model.py — an OpenAI-compatible endpoint started
inside the same sandbox, on its own loopback (a sandbox's network namespace
has nothing else), so no request leaves the machine.

What the binding adds over the C calls e2e.agents checks per CLI: the
AgentInfo / AgentTurn objects, on_event with dicts (plain and async), async
iteration over a turn (stream) and over a resumed log (follow), an
exception raised in on_event coming back out of send while the turn goes
on, cancel from another task, AgentTurnError for a failed turn, the
exceptions of bad sessions, and the blocking twins.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import os
import threading

import pytest

from conftest import REPO, eventually

HOST_PREFIX = "/usr/local/lib/agent-sandbox/agents"
AGENT = "codex"
SLOW_RUNNING = "pgrep -f 'tail -f /dev/nul[l]' >/dev/null && echo yes || echo no"

pytestmark = pytest.mark.skipif(
    not os.access(os.path.join(HOST_PREFIX, "bin", AGENT), os.X_OK),
    reason=f"no {AGENT} in {HOST_PREFIX} (scripts/agents-cache.sh installs it)")


def start_helper(sb, script, args, name):
    """Upload a tests/agents helper, start it in the background, return its
    port once its ready file says it listens."""
    sb.files.write_sync(f"/home/user/{script}", (REPO / "tests" / "agents" / script).read_bytes())
    sb.commands.run_sync(f"rm -f /tmp/{name}.port; (setsid python3 /home/user/{script} {args} "
                         f"--ready-file /tmp/{name}.port > /tmp/{name}.log 2>&1 < /dev/null &)")

    def port():
        r = sb.commands.run_sync(f"cat /tmp/{name}.port 2>/dev/null || true")
        return int(r.stdout) if r.stdout.strip().isdigit() else 0

    p = eventually(port)
    assert p, f"{script} did not start"
    return p


@pytest.fixture(scope="module")
def agents_sb(engine):
    from agent_sandbox import Sandbox

    sb = Sandbox.create_sync(template="agents", timeout=1200)
    sb.model_port = start_helper(sb, "scripted_model.py", "", "model")
    yield sb
    sb.kill_sync()


def settings(sb):
    return dict(cwd="/home/user", model="scripted",
                base_url=f"http://127.0.0.1:{sb.model_port}/v1", api_key_env="ASB_TEST_KEY",
                env={"ASB_TEST_KEY": "sk-scripted-test"})


def test_the_model_is_on_the_sandboxs_own_loopback(agents_sb):
    """What keeps every request of the CLIs on this machine: the sandbox's
    network namespace has its loopback and nothing else, and the scripted
    model listens there."""
    r = agents_sb.commands.run_sync("ls /sys/class/net")
    assert r.stdout.split() == ["lo"]
    r = agents_sb.commands.run_sync(
        f"python3 -c \"import urllib.request as u; print(u.urlopen("
        f"'http://127.0.0.1:{agents_sb.model_port}/v1/models').status)\"")
    assert r.stdout.strip() == "200"


def test_list(agents_sb):
    from agent_sandbox.agents import AgentInfo

    agents = {a.name: a for a in agents_sb.sync.agents.list()}
    assert set(agents) == {"codex", "qwen", "claude", "opencode"}
    a = agents[AGENT]
    assert isinstance(a, AgentInfo) and a.installed and a.package == "@openai/codex"
    assert a.version and a.path.startswith(HOST_PREFIX)
    assert [x.name for x in asyncio.run(agents_sb.agents.list())] == list(agents)


def test_turns_events_and_context(agents_sb):
    """A turn with a tool call (on_event gets dicts, numbered from 1 with no
    gap), a second turn as an async iterator that needs the first one's
    context, the log read after any seq, the transcript."""
    from agent_sandbox.agents import AgentTurn

    async def main():
        agents_sb.sync.commands.run("rm -f /tmp/x")
        s = await agents_sb.agents.session(AGENT, **settings(agents_sb))
        assert s.agent == AGENT and s.id.startswith("ags_")
        seen = []

        async def on_event(ev):  # an async handler runs on this loop
            seen.append(ev)

        t = await s.send("please WRITE the file", on_event=on_event)
        assert isinstance(t, AgentTurn)
        assert (t.status, t.turn, t.final_message, t.error) == ("completed", 1, "done", None)
        assert any("echo hi > /tmp/x" in c["command"] and c["exit_code"] == 0
                   for c in t.commands), t.commands
        assert t.usage["input_tokens"] > 0 and t.usage["output_tokens"] > 0
        assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
        types = [e["type"] for e in seen]
        assert types[-1] == "turn.completed" and t.last_seq == seen[-1]["seq"]
        assert "turn.started" in types and "tool.started" in types and "message" in types
        done = [e for e in seen if e["type"] == "tool.completed"]
        assert done and done[0]["exit_code"] == 0 and "native" in done[0]
        assert (await agents_sb.files.read("/tmp/x")) == "hi\n"

        turn2 = [ev async for ev in s.stream("RECALL what you did")]
        assert turn2[0]["seq"] == t.last_seq + 1
        assert turn2[-1]["type"] == "turn.completed"
        assert turn2[-1]["final_message"] == "recall: yes"
        assert all(e["turn"] == 2 for e in turn2)

        log = await s.events(after=t.last_seq)
        assert [e["seq"] for e in log] == [e["seq"] for e in turn2]
        info = await s.info()
        assert info["status"] == "idle" and info["last_seq"] == turn2[-1]["seq"]
        assert [x["prompt"] for x in info["turns"]] == ["please WRITE the file",
                                                        "RECALL what you did"]
        await s.close()

    asyncio.run(main())


def test_client_goes_away_and_catches_up(agents_sb):
    """An exception in on_event ends send with that exception; the turn goes
    on in the sandbox, and another handle (connect by id) follows the rest
    of the log, each event once."""
    s = agents_sb.sync.agents.session(AGENT, **settings(agents_sb))
    got = []

    class Away(Exception):
        pass

    def leave_after_two(ev):
        got.append(ev)
        if len(got) == 2:
            raise Away()

    with pytest.raises(Away):
        s.send("RECALL what you did", on_event=leave_after_two)

    async def catch_up():
        again = await agents_sb.agents.connect(s.id)
        assert again.agent == AGENT
        return [ev async for ev in again.follow(after=got[-1]["seq"])]

    rest = asyncio.run(catch_up())
    assert [e["seq"] for e in got + rest] == list(range(1, len(got) + len(rest) + 1))
    assert rest[-1]["type"] == "turn.completed"
    # the scripted model answers "recall: no" without an earlier tool call
    assert rest[-1]["final_message"] == "recall: no"
    with s:  # leaving the block closes the session in the sandbox
        pass
    from agent_sandbox import NotFoundException

    with pytest.raises(NotFoundException):
        s.send("hello")
    with pytest.raises(NotFoundException):
        agents_sb.sync.agents.connect(s.id)


def test_cancel_from_another_task(agents_sb):
    async def main():
        s = await agents_sb.agents.session(AGENT, **settings(agents_sb))
        turn = asyncio.ensure_future(s.send("SLEEP a while"))

        async def slow_tool_runs():
            deadline = asyncio.get_running_loop().time() + 180
            while asyncio.get_running_loop().time() < deadline:
                r = await agents_sb.commands.run(SLOW_RUNNING)
                if r.stdout.strip() == "yes":
                    return True
                await asyncio.sleep(0.2)
            return False

        assert await slow_tool_runs()
        await s.cancel()
        t = await turn  # a cancelled turn is returned, not raised
        assert t.status == "cancelled" and t.error
        gone = False
        deadline = asyncio.get_running_loop().time() + 60
        while not gone and asyncio.get_running_loop().time() < deadline:
            gone = (await agents_sb.commands.run(SLOW_RUNNING)).stdout.strip() == "no"
        assert gone, "the tool's process outlived the cancelled turn"
        await s.close()

    asyncio.run(main())


def test_failed_turn(agents_sb):
    from agent_sandbox import AgentTurnError

    s = agents_sb.sync.agents.session(AGENT, **settings(agents_sb))
    with pytest.raises(AgentTurnError) as ei:
        s.send("FAIL now")
    t = ei.value.turn
    assert t.status == "failed" and ("scripted failure" in t.error or "400" in t.error), t.error
    assert AGENT in str(ei.value)
    t = s.send("FAIL again", check=False)
    assert t.status == "failed" and t.turn == 2
    s.close()


def test_bad_sessions(agents_sb):
    from agent_sandbox import InvalidArgumentException, NotFoundException

    agents = agents_sb.sync.agents
    with pytest.raises(NotFoundException) as ei:
        agents.session("no-such-agent")
    assert "available: codex, qwen, claude, opencode" in str(ei.value)
    with pytest.raises(InvalidArgumentException) as ei:
        agents.session(AGENT, approval="sometimes")
    assert "approval" in str(ei.value)
    with pytest.raises(InvalidArgumentException) as ei:
        agents.session(AGENT, cwd="/no/such/dir")
    assert "cwd" in str(ei.value)
    with pytest.raises(NotFoundException):
        agents.connect("ags_nope")


def test_not_installed_and_failed_install(engine):
    """A sandbox whose server finds no agent: the listing says so, a session
    that may not install is refused naming the package, and an install from
    a registry nobody serves fails with the package and npm's reason, its
    progress events delivered (the registry is a closed port on the
    sandbox's own loopback)."""
    from agent_sandbox import CommandFailedError, NotFoundException, Sandbox

    sb = Sandbox.create_sync(template="agents", timeout=600,
                             envs={"ASB_AGENTS_PATH": "/nonexistent",
                                   "npm_config_fetch_retries": "0"})
    try:
        agents = sb.sync.agents
        (q,) = [a for a in agents.list() if a.name == "qwen"]
        assert not q.installed and q.version is None and q.path is None
        with pytest.raises(NotFoundException) as ei:
            agents.session("qwen", install=False)
        assert "not installed" in str(ei.value) and "@qwen-code/qwen-code" in str(ei.value)
        assert ei.value.remote_code == "AgentNotInstalledError"
        events = []
        lock = threading.Lock()

        def on_event(ev):
            with lock:
                events.append(ev["type"])

        with pytest.raises(CommandFailedError) as ei:
            agents.install("claude", registry="http://127.0.0.1:1", on_event=on_event)
        assert "@anthropic-ai/claude-code" in str(ei.value) and "npm install" in str(ei.value)
        assert events[0] == "install.started" and events[-1] == "install.completed"

        async def async_install():
            return await sb.agents.install("no-such-agent")

        with pytest.raises(NotFoundException):
            asyncio.run(async_install())
    finally:
        sb.kill_sync()
