"""mcp-gateway on the host, as the build made it (sanitized in the ASan
tree, where its exit is leak-checked): --foreground on a free loopback
port with tests/npm/mcp/echo_server.py as its server. The HTTP answers
(401 first, 404, 405, 400 parse error, 202 for notifications), tools/list
and tools/call through it, the sandbox.* tools, supervision (a crashed
server restarted, refused after 5 restarts), SIGTERM ends it with status 0
and stops its server; a bad --config and a server that cannot start fail
the command with the reason (daemon mode: the command returns only then).
usage: gateway_host.py <mcp-gateway binary>
SPDX-License-Identifier: Apache-2.0"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

BIN = sys.argv[1]
SRC = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "npm", "mcp",
                        "echo_server.py")).read()
CONFIG = {"github/t/echo": {"installCmd": "echo installed > marker",
                            "runCmd": f"python3 -c '{SRC}'", "envs": {"GREETING": "hey"}}}
TOKEN = "t0ken-for-the-host-test"


def post(url, body, token=TOKEN, method="POST"):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data if method == "POST" else None, headers=h,
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def call(url, name, args=None, id_=1):
    st, b = post(url, {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": {"name": name, "arguments": args or {}}})
    assert st == 200, (st, b)
    return b["result"]


def text(r):
    return "".join(c["text"] for c in r["content"])


def children(pid):
    """The processes whose parent is pid (the servers, each in its own session)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def main():
    state = tempfile.mkdtemp(prefix="asb-mcpgw-host-")
    env = dict(os.environ, GATEWAY_ACCESS_TOKEN=TOKEN)
    p = subprocess.Popen([BIN, "--config", json.dumps(CONFIG), "--listen", "127.0.0.1:0",
                          "--state-dir", state, "--foreground"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("MCP gateway serving on http://127.0.0.1:"), line
        url = line.split()[-1]
        assert url.endswith("/mcp")
        with open(os.path.join(state, ".token")) as f:
            assert f.read() == TOKEN
        assert os.stat(os.path.join(state, ".token")).st_mode & 0o777 == 0o600
        lst = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert post(url, lst, token=None)[0] == 401
        assert post(url, lst, token=TOKEN[:-1])[0] == 401
        assert post(url.replace("/mcp", "/other"), lst)[0] == 404
        assert post(url, lst, method="GET")[0] == 405
        st, b = post(url, b"{nope")
        assert st == 400 and b["error"]["code"] == -32700, b
        assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
        st, b = post(url, {"jsonrpc": "2.0", "id": "a", "method": "initialize",
                           "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}}})
        assert st == 200 and b["id"] == "a" and b["result"]["protocolVersion"] == "2025-03-26"
        st, b = post(url, {"jsonrpc": "2.0", "id": 2, "method": "nope"})
        assert b["error"]["code"] == -32601
        names = sorted(t["name"] for t in post(url, lst)[1]["result"]["tools"])
        assert names == ["echo.crash", "echo.echo", "echo.env", "sandbox.list_files",
                         "sandbox.read_file", "sandbox.run_command", "sandbox.write_file"], names
        assert text(call(url, "echo.echo", {"text": "x"})) == "hey x installed"
        assert text(call(url, "echo.env")) == "token:none"
        r = call(url, "sandbox.run_command", {"command": "echo out; echo err >&2; exit 3"})
        assert r["structuredContent"] == {"stdout": "out\n", "stderr": "err\n", "exit_code": 3}
        r = call(url, "sandbox.run_command", {"command": "true", "timeout_s": 0})
        assert r["isError"] and "timeout_s" in text(r)
        # supervision: each crash is reported, the next call restarts it,
        # five times; then the server is reported as given up on
        for i in range(5):
            r = call(url, "echo.crash")
            assert r["isError"] and "exited with status 3" in text(r), r
            assert text(call(url, "echo.echo", {"text": str(i)})) == f"hey {i} installed"
        call(url, "echo.crash")
        r = call(url, "echo.echo", {"text": "late"})
        assert r["isError"] and "restarted 5 times already" in text(r), r
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, (p.returncode, err)
        assert "Sanitizer" not in err, err
    finally:
        if p.poll() is None:  # a failure: end the gateway and the servers it started
            for kid in children(p.pid):
                try:
                    os.killpg(kid, signal.SIGKILL)
                except OSError:
                    pass
            p.kill()
            p.wait()

    # daemon mode's failures: the command exits with the reason; nothing stays
    for cfg, rc, want in [
            ({"exa": {}}, 2, "catalog servers"),
            ({"github/a/b": {"runCmd": "echo cannot >&2; exit 9"}}, 1, "exited with status 9: cannot")]:
        r = subprocess.run([BIN, "--config", json.dumps(cfg), "--listen", "127.0.0.1:0",
                            "--state-dir", state], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == rc and want in r.stderr, (r.returncode, r.stderr)
    with open(os.path.join(state, "gateway.log")) as f:
        log = f.read()
    assert "Sanitizer" not in log, log
    r = subprocess.run([BIN, "--config", json.dumps(CONFIG)], env=dict(os.environ),
                       capture_output=True, text=True)
    assert r.returncode == 2 and "GATEWAY_ACCESS_TOKEN" in r.stderr
    shutil.rmtree(state, ignore_errors=True)
    print("ok")


main()
