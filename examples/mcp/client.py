#!/usr/bin/python3
"""An MCP client in a few lines, no libraries: start agent-sandbox-mcp over
stdio, initialize, list the tools, run a command and some Python in the
default sandbox, read a file back, and end (the server then kills the
default sandbox). What MCP clients such as Claude Desktop do, by hand.

    ASB_MCP_BIN=build/core/mcp/agent-sandbox-mcp python3 examples/mcp/client.py

The server finds the sandboxes like every libagentsandbox program (E2B_* /
ASB_* variables, or the local engine).
SPDX-License-Identifier: Apache-2.0
"""
import json
import os
import shutil
import subprocess
import sys

binary = os.environ.get("ASB_MCP_BIN") or shutil.which("agent-sandbox-mcp")
if not binary:
    sys.exit("set ASB_MCP_BIN to agent-sandbox-mcp (or put it on PATH)")
server = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
next_id = 0


def request(method, params=None):
    """Send a request; print log messages until its answer comes."""
    global next_id
    next_id += 1
    msg = {"jsonrpc": "2.0", "id": next_id, "method": method}
    if params is not None:
        msg["params"] = params
    server.stdin.write(json.dumps(msg) + "\n")
    server.stdin.flush()
    for line in server.stdout:
        m = json.loads(line)
        if m.get("method") == "notifications/message":
            print(f"  [{m['params'].get('logger')}] {m['params']['data']!r}")
        elif m.get("id") == next_id:
            if "error" in m:
                raise RuntimeError(m["error"]["message"])
            return m["result"]
    raise RuntimeError("the server went away")


def tool(name, **arguments):
    result = request("tools/call", {"name": name, "arguments": arguments})
    if result.get("isError"):
        raise RuntimeError(result["content"][0]["text"])
    return result.get("structuredContent") or result["content"]


init = request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "example", "version": "1.0"}})
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
print("server:", init["serverInfo"]["name"], "protocol", init["protocolVersion"])
tools = request("tools/list")["tools"]
print(len(tools), "tools:", ", ".join(t["name"] for t in tools[:6]), "...")

run = tool("run_command", command="uname -s; echo $((6 * 7)) > answer.txt")
print("run_command exit", run["exit_code"], "stdout", repr(run["stdout"]), "in", run["sandbox_id"])
print("read_file:", tool("read_file", path="answer.txt")[0]["text"].strip())
code = tool("run_command", command="python3 -c 'import sys; print(sys.version_info[0])'")
print("python", code["stdout"].strip())

server.stdin.close()  # end of session: the default sandbox is killed
sys.exit(server.wait())
