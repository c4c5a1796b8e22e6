"""A canned control plane on loopback for the bindings' encoding tests
(tests/bindings/lua/network_encoding_spec.lua): it stands for a remote
E2B-style API, not for our engine, whose real replies the e2e tests read.
Appends each request as one JSON line {method, path, body} to LOG; answers
create (POST) with a sandbox, PUT with 204, GET with the sandbox detail
below. Prints "<port> <pid>" on its first line; dies with its parent.

usage: /usr/bin/python3 canned_cp.py LOG
SPDX-License-Identifier: Apache-2.0"""

import ctypes
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SID = "n0net0test"
DETAIL = {
    "sandboxID": SID, "templateID": "base", "envdVersion": "0.6.13",
    "allowInternetAccess": False,
    "network": {"allowOut": ["198.18.0.10", "*.example.test"], "denyOut": ["0.0.0.0/0"],
                "rules": {"api.example.test": [{"transform": {"headers": {"X-A": "b"}}}]},
                "egressProxy": {"address": "198.18.0.20:1080", "username": "u",
                                "password": "never shown"},
                "allowPublicTraffic": False, "maskRequestHost": "${PORT}-x.example.test"},
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _reply(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "body": json.loads(raw) if raw else None}) + "\n")

    def do_POST(self):
        self._record()
        self._reply(201, {"sandboxID": SID, "templateID": "base", "envdVersion": "0.6.13",
                          "envdAccessToken": "tok", "domain": "localhost"})

    def do_PUT(self):
        self._record()
        self._reply(204)

    def do_GET(self):
        self._record()
        self._reply(200, [DETAIL] if self.path.startswith("/v2/sandboxes") else DETAIL)


def main():
    ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    import os
    print(srv.server_address[1], os.getpid(), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
