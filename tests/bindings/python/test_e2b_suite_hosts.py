"""tests/e2b-python/hosts/sitecustomize.py, the *.localhost resolver that
tests/e2b-python/run.sh loads into the Python running E2B's suite: names
under .localhost resolve to loopback (RFC 6761) in a fresh interpreter
that has it on PYTHONPATH, urllib reaches a server through such a name,
everything else goes to glibc unchanged, and a sitecustomize it shadows
still runs. Nothing here resolves a name through DNS.
SPDX-License-Identifier: Apache-2.0
"""

import os
import subprocess
import sys
import textwrap

HOSTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2b-python", "hosts")


def run_py(code, tmp_path, extra_path=()):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(HOSTS), *extra_path])
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_localhost_names_resolve_to_loopback(tmp_path):
    out = run_py("""
        import socket
        def addrs(host, family=0):
            return sorted({a[4][0] for a in socket.getaddrinfo(host, 443, family, socket.SOCK_STREAM)})
        print(addrs("49983-abcdef.localhost"))
        print(addrs("8000-ID.LocalHost."))
        print(addrs(b"x.y.localhost", socket.AF_INET))
        print(addrs("x.localhost", socket.AF_INET6))
        print(addrs("127.0.0.2"))
        import sitecustomize
        print([sitecustomize._is_localhost_name(n) for n in
               ("a.localhost.example", "notlocalhost", "localhost-x", "a.localhostx")])
    """, tmp_path)
    assert out.splitlines() == [
        "['127.0.0.1']", "['127.0.0.1']", "['127.0.0.1']", "['::1']",
        "['127.0.0.2']",  # numeric: glibc's answer, untouched
        "[False, False, False, False]",
    ]


def test_urllib_reaches_a_server_through_a_localhost_name(tmp_path):
    out = run_py("""
        import http.server, threading, urllib.request
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = self.headers["Host"].encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *a):
                pass
        srv = http.server.HTTPServer(("127.0.0.1", 0), H)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        port = srv.server_address[1]
        with urllib.request.urlopen(f"http://8000-sbx.localhost:{port}/", timeout=60) as r:
            print(r.status, r.read().decode())
        srv.shutdown()
        srv.server_close()
    """, tmp_path)
    port_host = out.split()[1]
    assert out.split()[0] == "200" and port_host.startswith("8000-sbx.localhost:")


def test_shadowed_sitecustomize_still_runs(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.ASB_OTHER_SITE = 1\n")
    out = run_py("""
        import builtins, socket
        print(getattr(builtins, "ASB_OTHER_SITE", 0), socket.getaddrinfo.__module__)
    """, tmp_path, extra_path=[str(other)])
    assert out.split() == ["1", "sitecustomize"]
