"""E2B's ``mcp`` create option through agent_sandbox.compat (sync and
async): ``Sandbox.create(mcp=...)`` makes a sandbox of the bundled
mcp-gateway template and starts our mcp-gateway in it (as E2B's SDK does);
the stdio server of tests/npm/mcp/echo_server.py is served at port 50005
/mcp behind ``get_mcp_token()``; ``get_mcp_url()`` has E2B's form. MCP is
spoken with plain JSON POSTs (the gateway answers application/json)
through the engine's router. A bad config is E2B's SandboxException
"Failed to start MCP gateway: ..." and leaves no sandbox.
SPDX-License-Identifier: Apache-2.0"""

import json
import os
import urllib.error
import urllib.request

import pytest

from agent_sandbox import SandboxException
from agent_sandbox import compat

_SRC = open(os.path.join(os.path.dirname(__file__), "..", "..", "npm", "mcp",
                         "echo_server.py")).read()
CONFIG = {"github/asb-tests/echo": {"installCmd": "echo installed > marker",
                                    "runCmd": f"python3 -c '{_SRC}'",
                                    "envs": {"GREETING": "hi"}}}


def _post(engine, sandbox_id, token, msg):
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "50005"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(engine.url + "/mcp", data=json.dumps(msg).encode(),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("WWW-Authenticate")


def _rpc(engine, sid, token, method, params=None, id_=1):
    st, body = _post(engine, sid, token,
                     {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}})
    assert st == 200, body
    return body["result"]


def test_compat_mcp_gateway(engine):
    sb = compat.Sandbox.create(mcp=CONFIG, timeout=120)
    try:
        assert sb.get_mcp_url() == f"https://{sb.get_host(50005)}/mcp"
        assert sb.get_host(50005).startswith(f"50005-{sb.sandbox_id}.")
        token = sb.get_mcp_token()
        assert len(token) == 36
        # another object for the same sandbox reads the token file as root
        assert compat.Sandbox.connect(sb.sandbox_id).get_mcp_token() == token
        init = _rpc(engine, sb.sandbox_id, token, "initialize",
                    {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "py", "version": "1"}})
        assert init["protocolVersion"] == "2025-06-18"
        assert init["serverInfo"]["name"] == "mcp-gateway"
        tools = _rpc(engine, sb.sandbox_id, token, "tools/list")["tools"]
        assert sorted(t["name"] for t in tools) == [
            "echo.crash", "echo.echo", "echo.env", "sandbox.list_files", "sandbox.read_file",
            "sandbox.run_command", "sandbox.write_file"]
        r = _rpc(engine, sb.sandbox_id, token, "tools/call",
                 {"name": "echo.echo", "arguments": {"text": "py"}})
        assert r["content"][0]["text"] == "hi py installed"
        assert _post(engine, sb.sandbox_id, None, {"jsonrpc": "2.0", "id": 1,
                                                   "method": "tools/list"}) == (401, "Bearer")
        assert _post(engine, sb.sandbox_id, token + "x",
                     {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) == (401, "Bearer")
    finally:
        sb.kill()


async def test_async_compat_mcp_gateway_and_bad_config(engine):
    sb = await compat.AsyncSandbox.create(mcp=CONFIG, timeout=120)
    try:
        assert sb.get_mcp_url() == f"https://{sb.get_host(50005)}/mcp"
        token = await sb.get_mcp_token()
        tools = _rpc(engine, sb.sandbox_id, token, "tools/list")["tools"]
        assert "echo.echo" in [t["name"] for t in tools]
    finally:
        await sb.kill()
    before = len(compat.Sandbox.list().next_items())
    with pytest.raises(SandboxException, match="Failed to start MCP gateway: .*catalog"):
        await compat.AsyncSandbox.create(mcp={"exa": {"apiKey": "k"}}, timeout=60)
    with pytest.raises(SandboxException,
                       match="Failed to start MCP gateway: .*exited with status 4: bad"):
        compat.Sandbox.create(mcp={"github/a/b": {"runCmd": "echo bad >&2; exit 4"}},
                              timeout=60)
    assert len(compat.Sandbox.list().next_items()) == before


def test_native_mcp_through_the_c_abi(engine):
    """The native API (asb_sandbox_options.mcp_json, asb_sandbox_mcp_url and
    _token): the same gateway, the sync and the async Sandbox."""
    from agent_sandbox import NotFoundException, SandboxSync
    sb = SandboxSync.create(mcp=CONFIG, timeout=120)
    try:
        assert sb.get_mcp_url() == f"{sb.get_url(50005)}/mcp"
        token = sb.get_mcp_token()
        assert len(token) == 36
        tools = _rpc(engine, sb.sandbox_id, token, "tools/list")["tools"]
        assert "echo.echo" in [t["name"] for t in tools]
    finally:
        sb.kill()
    plain = SandboxSync.create(timeout=60)
    try:
        with pytest.raises(NotFoundException):
            plain.get_mcp_token()
    finally:
        plain.kill()


async def test_native_async_mcp_bad_config(engine):
    from agent_sandbox import Sandbox
    with pytest.raises(SandboxException,
                       match="^Failed to start MCP gateway: .*exited with status 4: bad"):
        await Sandbox.create(mcp={"github/a/b": {"runCmd": "echo bad >&2; exit 4"}}, timeout=60)
