# A tiny stdio MCP server the mcp-gateway tests run inside the sandbox
# (runCmd: python3 -c "<this file>"): newline-delimited JSON-RPC, two pages
# of tools/list, and tools that show what the gateway gave it (envs, its
# working directory: the installCmd marker), its token-free environment, and a
# crash (exit 3) for the supervision check. No single quotes in this file:
# the test passes it inside one.
import json
import os
import sys

PAGES = [
    [{"name": "echo", "description": "Echo text with GREETING and the install marker",
      "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"]}}],
    [{"name": "env", "description": "Whether GATEWAY_ACCESS_TOKEN reached the server",
      "inputSchema": {"type": "object"}},
     {"name": "crash", "description": "Exit with status 3", "inputSchema": {"type": "object"}}],
]


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def text(t, err=False):
    return {"content": [{"type": "text", "text": t}], "isError": err}


for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth, mid, p = m.get("method"), m["id"], m.get("params") or {}
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": p.get("protocolVersion"), "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1"}}})
    elif meth == "tools/list":
        page = int(p.get("cursor") or 0)
        r = {"tools": PAGES[page]}
        if page + 1 < len(PAGES):
            r["nextCursor"] = str(page + 1)
        send({"jsonrpc": "2.0", "id": mid, "result": r})
    elif meth == "tools/call":
        name, args = p.get("name"), p.get("arguments") or {}
        if name == "echo":
            with open("marker") as f:
                mark = f.read().strip()
            send({"jsonrpc": "2.0", "id": mid,
                  "result": text(os.environ.get("GREETING", "") + " " + args["text"] + " " + mark)})
        elif name == "env":
            send({"jsonrpc": "2.0", "id": mid,
                  "result": text("token:" + os.environ.get("GATEWAY_ACCESS_TOKEN", "none"))})
        elif name == "crash":
            sys.stderr.write("crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
