"""Coding agents in a sandbox: a Codex (or Qwen Code, Claude Code, OpenCode)
session in a sandbox of the built-in ``agents`` template, driven with
``sandbox.agents`` (docs/agents.md).

1. List the agents the sandbox's server knows.
2. Open a session pointed at an OpenAI-compatible endpoint, send a prompt,
   print the events as they come (a tool call, its exit code, the answer)
   and the turn's result; the file the agent's tool wrote is in the sandbox.
3. A second turn in the same session, read as an async iterator: the agent
   keeps its context.

The model endpoint runs inside the sandbox, on its own loopback, so the
example needs no network (sandboxes have one: docs/networking.md): by default this example starts the
repository's scripted model there (tests/agents/scripted_model.py, an
OpenAI-compatible server that plays a fixed script). With egress, point
``--base-url`` at any OpenAI-compatible endpoint instead (a company gateway,
Alibaba Cloud Model Studio's https://dashscope.aliyuncs.com/compatible-mode/v1)
and give its key in the environment variable ``--api-key-env`` names.

    python3 examples/python/agents.py [--agent codex] [--base-url URL --model M --api-key-env NAME]

The agents template needs the CLIs on the host: scripts/agents-cache.sh.
SPDX-License-Identifier: Apache-2.0
"""
import argparse
import asyncio
import os
import time
from pathlib import Path

from agent_sandbox import Sandbox

SCRIPTED_MODEL = Path(__file__).resolve().parents[2] / "tests" / "agents" / "scripted_model.py"


async def start_scripted_model(sandbox: Sandbox) -> str:
    """Start the scripted model in the sandbox; its base URL once it listens."""
    await sandbox.files.write("/home/user/scripted_model.py", SCRIPTED_MODEL.read_bytes())
    await sandbox.commands.run("python3 /home/user/scripted_model.py --ready-file /tmp/model.port",
                               background=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        port = (await sandbox.commands.run("cat /tmp/model.port 2>/dev/null || true")).stdout
        if port.strip().isdigit():
            return f"http://127.0.0.1:{port.strip()}/v1"
        await asyncio.sleep(0.1)
    raise RuntimeError("the scripted model did not start")


def show(event: dict) -> None:
    t = event["type"]
    if t == "tool.started":
        print(f"  [{event['seq']}] {t}: {event['command'] or event['tool']}")
    elif t == "tool.completed":
        print(f"  [{event['seq']}] {t}: exit code {event['exit_code']}")
    elif t == "message":
        print(f"  [{event['seq']}] {t}: {event['text']}")
    elif t == "error":
        print(f"  [{event['seq']}] {t}{' (fatal)' if event['fatal'] else ''}: {event['message']}")
    elif t in ("turn.started", "turn.completed"):
        print(f"  [{event['seq']}] {t}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", default="codex", choices=["codex", "qwen", "claude", "opencode"])
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint the sandbox reaches")
    ap.add_argument("--model", default="scripted")
    ap.add_argument("--api-key-env", default="ASB_EXAMPLE_KEY",
                    help="the environment variable (here and in the sandbox) holding its key")
    a = ap.parse_args()

    async with await Sandbox.create("agents", timeout=900) as sandbox:
        for info in await sandbox.agents.list():
            print(f"{info.name}: {info.package} {info.version or '-'} "
                  f"({'installed' if info.installed else 'installable'})")
        base_url = a.base_url or await start_scripted_model(sandbox)
        key = os.environ.get(a.api_key_env, "sk-not-needed-by-the-scripted-model")
        async with await sandbox.agents.session(
                a.agent, cwd="/home/user", model=a.model, base_url=base_url,
                api_key_env=a.api_key_env, env={a.api_key_env: key}) as session:
            print(f"session {session.id} ({session.agent})")
            turn = await session.send("please WRITE the file", on_event=show)
            print(f"turn {turn.turn}: {turn.status}, final message {turn.final_message!r}")
            print(f"commands: {[c['command'] for c in turn.commands]}")
            print(f"tokens: {turn.usage['input_tokens']} in, {turn.usage['output_tokens']} out")
            print("/tmp/x:", (await sandbox.files.read("/tmp/x")).strip())
            async for event in session.stream("RECALL what you did"):
                if event["type"] == "turn.completed":
                    print(f"turn {event['turn']}: {event['final_message']}")


if __name__ == "__main__":
    asyncio.run(main())
