#!/usr/bin/env python3
"""A local npm registry: serves the package tarballs of a directory (made
with `npm pack`) with the registry protocol npm install speaks - a
packument at /<name> (dist.tarball, shasum, integrity) and the tarball
itself - so the agents service's real install path (npm install -g) runs
inside a sandbox that has no network. Unknown packages answer 404, as the
public registry does (npm skips optional dependencies it cannot fetch).

usage: local_registry.py --dir DIR [--port N] [--ready-file FILE]
SPDX-License-Identifier: Apache-2.0
"""

import argparse
import base64
import hashlib
import json
import os
import tarfile
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PACKAGES = {}  # name -> {version: (path, manifest)}


def scan(d):
    for f in sorted(os.listdir(d)):
        if not f.endswith(".tgz"):
            continue
        path = os.path.join(d, f)
        with tarfile.open(path, "r:gz") as t:
            m = json.load(t.extractfile("package/package.json"))
        PACKAGES.setdefault(m["name"], {})[m["version"]] = (path, m)


def packument(name, base):
    versions = {}
    for ver, (path, m) in PACKAGES[name].items():
        data = open(path, "rb").read()
        doc = {k: m[k] for k in ("name", "version", "bin", "dependencies",
                                 "optionalDependencies", "engines", "scripts")
               if k in m}
        doc["dist"] = {
            "tarball": f"{base}/{urllib.parse.quote(name, safe='@')}/-/{os.path.basename(path)}",
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
        }
        versions[ver] = doc
    latest = sorted(versions, key=lambda v: [int(x) if x.isdigit() else x
                                             for x in v.replace("-", ".").split(".")])[-1]
    return {"name": name, "dist-tags": {"latest": latest}, "versions": versions}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
        base = f"http://{self.headers.get('Host')}"
        if "/-/" in path:
            name, _, file = path.rpartition("/-/")
            for ver, (p, m) in PACKAGES.get(name, {}).items():
                if os.path.basename(p) == file:
                    return self.send(200, open(p, "rb").read(), "application/octet-stream")
        elif path in PACKAGES:
            return self.send(200, json.dumps(packument(path, base)).encode())
        self.send(404, b'{"error":"Not found"}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready-file")
    a = ap.parse_args()
    scan(a.dir)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    if a.ready_file:
        with open(a.ready_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        os.rename(a.ready_file + ".tmp", a.ready_file)
    print("listening on", srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
