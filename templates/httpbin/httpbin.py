#!/usr/bin/env python3
"""A small HTTP echo server in go-httpbin's JSON shapes (the built-in
`httpbin` template, templates/httpbin/template.yaml).

E2B builds its `httpbin` sidecar template from go-httpbin, a Go binary that
no Debian package ships. Debian's python3-httpbin is the original Flask
httpbin, whose shapes differ where the SDK tests look: its /headers gives
one string per header ({"X-Test-Token": "v"}), go-httpbin's a list of
values ({"X-Test-Token": ["v"]}, Go's http.Header), which is what E2B's
network tests compare. So this is hand-written, on the standard library
only (the base template's python3), with the endpoints E2B's tests and
most users touch, each in go-httpbin's field names:

  /headers                 {"headers": {Name: [values]}}
  /get, /delete, /head     {"args", "headers", "method", "origin", "url"}
  /post, /put, /patch,     the same plus "data", "files", "form", "json"
  /anything[/...]          (any method)
  /status/{code}           that status (a comma list: the first), empty body
  /ip                      {"origin"}
  /user-agent              {"user-agent"}
  /uuid                    {"uuid"}
  /hostname                {"hostname"}
  /bearer                  {"authenticated", "token"} or 401
  /basic-auth/{u}/{p}      {"authenticated", "authorized", "user"} or 401
  /bytes/{n}               n random bytes (at most 100 KiB)

Header names are put in Go's canonical form (X-Test-Token) as go-httpbin's
are. Errors: {"status_code", "error"} as go-httpbin gives them.

usage: httpbin.py [-host 0.0.0.0] [-port 8080]   (go-httpbin's flags)
SPDX-License-Identifier: Apache-2.0
"""
import base64
import json
import os
import socket
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 1 << 20
MAX_BYTES = 100 * 1024


def canonical(name):
    return "-".join(w[:1].upper() + w[1:].lower() for w in name.split("-"))


class Handler(BaseHTTPRequestHandler):
    server_version = "asb-httpbin/1"
    protocol_version = "HTTP/1.1"
    # the head and the body are two writes: without TCP_NODELAY the body
    # waits for the peer's delayed ACK of the head (40 ms a response)
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet: the start log stays small
        pass

    # -- helpers --------------------------------------------------------------
    def headers_dict(self):
        out = {}
        for k, v in self.headers.items():
            out.setdefault(canonical(k), []).append(v)
        return out

    def origin(self):
        fwd = self.headers.get("X-Forwarded-For")
        if fwd:
            return fwd.split(",")[0].strip()
        return self.client_address[0]

    def url(self):
        host = self.headers.get("Host", "localhost")
        scheme = self.headers.get("X-Forwarded-Proto", "http")
        return "%s://%s%s" % (scheme, host, self.path)

    def args(self):
        return parse_qs(urlsplit(self.path).query, keep_blank_values=True)

    def send(self, status, body=b"", ctype="application/json; charset=utf-8", extra=None):
        self.send_response(status)
        if body or ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, obj, extra=None):
        self.send(status, (json.dumps(obj, indent=2) + "\n").encode(), extra=extra)

    def error(self, status, msg):
        self.send_json(status, {"status_code": status, "error": msg})

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
                if len(data) > MAX_BODY:
                    raise ValueError("request body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(n) if n > 0 else b""

    def no_body_response(self):
        return {"args": self.args(), "headers": self.headers_dict(), "method": self.command,
                "origin": self.origin(), "url": self.url()}

    def body_response(self):
        r = self.no_body_response()
        raw = self.body()
        text = raw.decode("utf-8", "replace")
        ctype = self.headers.get("Content-Type", "")
        r.update({"data": "", "files": {}, "form": {}, "json": None})
        if ctype.startswith("application/x-www-form-urlencoded"):
            r["form"] = parse_qs(text, keep_blank_values=True)
        else:
            r["data"] = text
            if ctype.startswith("application/json") and text:
                try:
                    r["json"] = json.loads(text)
                except ValueError:
                    pass
        return r

    # -- routes ---------------------------------------------------------------
    def route(self):
        path = urlsplit(self.path).path
        parts = [p for p in path.split("/") if p]
        head = parts[0] if parts else ""
        m = self.command
        with_body = m in ("POST", "PUT", "PATCH", "DELETE")
        if head == "anything":
            return self.send_json(200, self.body_response() if with_body else
                                  dict(self.no_body_response(), data="", files={}, form={},
                                       json=None))
        if len(parts) == 1 and head in ("get", "head") and m in ("GET", "HEAD"):
            return self.send_json(200, self.no_body_response())
        if len(parts) == 1 and head in ("post", "put", "patch", "delete"):
            if m != head.upper():
                return self.error(405, "Method Not Allowed")
            return self.send_json(200, self.body_response())
        if path == "/headers":
            return self.send_json(200, {"headers": self.headers_dict()})
        if path == "/ip":
            return self.send_json(200, {"origin": self.origin()})
        if path == "/user-agent":
            return self.send_json(200, {"user-agent": self.headers.get("User-Agent", "")})
        if path == "/uuid":
            return self.send_json(200, {"uuid": str(uuid.uuid4())})
        if path == "/hostname":
            return self.send_json(200, {"hostname": socket.gethostname()})
        if head == "status" and len(parts) == 2:
            try:
                code = int(parts[1].split(",")[0])
            except ValueError:
                return self.error(400, "invalid status code")
            if not 100 <= code <= 599:
                return self.error(400, "invalid status code")
            return self.send(code, b"", ctype=None)
        if path == "/bearer":
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or not auth[7:].strip():
                return self.send(401, b"", ctype=None, extra={"WWW-Authenticate": "Bearer"})
            return self.send_json(200, {"authenticated": True, "token": auth[7:].strip()})
        if head == "basic-auth" and len(parts) == 3:
            want = "%s:%s" % (parts[1], parts[2])
            auth = self.headers.get("Authorization", "")
            got = ""
            if auth.startswith("Basic "):
                try:
                    got = base64.b64decode(auth[6:]).decode()
                except ValueError:
                    got = ""
            ok = got == want
            r = {"authenticated": ok, "authorized": ok, "user": got.split(":")[0] if got else ""}
            extra = None if ok else {"WWW-Authenticate": 'Basic realm="Fake Realm"'}
            return self.send_json(200 if ok else 401, r, extra=extra)
        if head == "bytes" and len(parts) == 2:
            try:
                n = int(parts[1])
            except ValueError:
                return self.error(400, "invalid byte count")
            if not 0 <= n <= MAX_BYTES:
                return self.error(400, "invalid byte count (at most %d)" % MAX_BYTES)
            return self.send(200, os.urandom(n), ctype="application/octet-stream")
        return self.error(404, "Not Found")

    def handle_one(self):
        try:
            self.route()
        except ValueError as e:
            self.error(400, str(e))

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_one


def main(argv):
    host, port = "0.0.0.0", 8080
    it = iter(argv)
    for a in it:
        if a in ("-host", "--host"):
            host = next(it)
        elif a in ("-port", "--port"):
            port = int(next(it))
        else:
            sys.exit("usage: httpbin.py [-host ADDR] [-port PORT]")
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer((host, port), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
