"""E2B's `mcp` option: a sandbox that serves MCP servers' tools on one
Streamable HTTP endpoint. The server here is a few lines of Python given
as its runCmd; the gateway starts it inside the sandbox and offers its
tools as "hello.<tool>", beside the sandbox's own ("sandbox.<tool>").
Any MCP client then talks to get_mcp_url() with get_mcp_token() as its
bearer token; this one speaks plain JSON-RPC over urllib.
SPDX-License-Identifier: Apache-2.0"""

import json
import shlex
import urllib.request

from agent_sandbox import compat

# A stdio MCP server: one JSON-RPC message per line on stdin and stdout.
SERVER = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    r = {}
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "hello", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "greet", "description": "Greet someone",
                        "inputSchema": {"type": "object",
                                        "properties": {"name": {"type": "string"}}}}]}
    elif m["method"] == "tools/call":
        r = {"content": [{"type": "text", "text": "hello, " + m["params"]["arguments"]["name"]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""

mcp = {"github/example/hello": {"runCmd": "python3 -c " + shlex.quote(SERVER)}}


def main() -> None:
    sb = compat.Sandbox.create(mcp=mcp, timeout=120)
    try:
        print("MCP URL:", sb.get_mcp_url())  # https://50005-<id>.<domain>/mcp
        token = sb.get_mcp_token()
        # Until the engine serves https on *.localhost, reach the gateway
        # with plain http through the engine's port and the sandbox's host
        # name in the Host header (the engine routes on it).
        host = sb.get_host(50005)
        url = f"http://127.0.0.1:{host.rsplit(':', 1)[1]}/mcp"

        def rpc(method, params=None):
            req = urllib.request.Request(
                url, method="POST",
                data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                 "params": params or {}}).encode(),
                headers={"Host": host, "Authorization": f"Bearer {token}",
                         "Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"})
            with urllib.request.urlopen(req) as r:
                return json.loads(r.read())["result"]

        print("tools:", sorted(t["name"] for t in rpc("tools/list")["tools"]))
        r = rpc("tools/call", {"name": "hello.greet", "arguments": {"name": "MCP"}})
        print(r["content"][0]["text"])
        r = rpc("tools/call", {"name": "sandbox.run_command",
                               "arguments": {"command": "echo $USER in $PWD"}})
        print(r["structuredContent"]["stdout"], end="")
    finally:
        sb.kill()


main()
