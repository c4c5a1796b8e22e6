#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The test internet's servers for net.egress.* (run inside its netns):
HTTP on :80 and HTTPS on :443 (the test CA's certificate) answering with
what they received (Host, headers, the address the connection came to);
an echo-after-EOF server on :7 (reads to EOF, then replies with the byte
count and SHA-256: half-close through the proxy), a sink on :9 (byte count); a SOCKS5 server (RFC
1928/1929, user/password) on 198.18.0.1:1080 that logs each CONNECT.
Writes DIR/servers.ready when all listen.

usage: egress_servers.py DIR CERT KEY SOCKS_USER SOCKS_PASS NAME=ADDR...
"""
import hashlib
import http.server
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading

DIR, CERT, KEY, SUSER, SPASS = sys.argv[1:6]
NAMES = dict(a.split('=', 1) for a in sys.argv[6:])
LOG_LOCK = threading.Lock()


def log(name, line):
    with LOG_LOCK, open(f'{DIR}/{name}.log', 'a') as f:
        f.write(line + '\n')


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def answer(self):
        if 'chunked' in (self.headers.get('Transfer-Encoding') or ''):
            body = b''
            while True:
                size = int(self.rfile.readline().split(b';')[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b'\r\n', b'\n', b''):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            n = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(n) if n else b''
        seen = {
            'host': self.headers.get('Host'),
            'local': self.connection.getsockname()[0],
            'path': self.path,
            'headers': {k.lower(): v for k, v in self.headers.items()},
            'body_len': len(body),
        }
        log('requests', json.dumps(seen))  # the server's side: what arrived
        # The reply names the headers but carries only digests of their
        # values: a secret injected at egress must not come back to the
        # sandbox through the test's own echo.
        seen['headers'] = {k: hashlib.sha256(v.encode()).hexdigest()[:16]
                           for k, v in seen['headers'].items()}
        reply = json.dumps(seen).encode()
        if self.path.startswith('/big/'):
            reply = b'x' * int(self.path[5:])
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = do_PUT = answer


class TServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class TServer6(TServer):
    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()


class EchoEOF(socketserver.BaseRequestHandler):
    def handle(self):
        h, n = hashlib.sha256(), 0
        while True:
            b = self.request.recv(65536)
            if not b:
                break
            h.update(b)
            n += len(b)
        self.request.sendall(f'{n} {h.hexdigest()}\n'.encode())


class Sink(socketserver.BaseRequestHandler):
    def handle(self):
        n = 0
        while True:
            b = self.request.recv(1 << 20)
            if not b:
                break
            n += len(b)
        self.request.sendall(f'{n}\n'.encode())


class Socks(socketserver.BaseRequestHandler):
    def rd(self, n):
        b = b''
        while len(b) < n:
            k = self.request.recv(n - len(b))
            if not k:
                raise EOFError
            b += k
        return b

    def handle(self):
        try:
            ver, nm = self.rd(2)
            methods = self.rd(nm)
            if ver != 5 or 2 not in methods:
                self.request.sendall(b'\x05\xff')
                return
            self.request.sendall(b'\x05\x02')
            _, ul = self.rd(2)
            user = self.rd(ul).decode()
            pl = self.rd(1)[0]
            pw = self.rd(pl).decode()
            if (user, pw) != (SUSER, SPASS):
                self.request.sendall(b'\x01\x01')
                log('socks', f'AUTHFAIL user={user}')
                return
            self.request.sendall(b'\x01\x00')
            ver, cmd, _, atyp = self.rd(4)
            if atyp == 1:
                host = socket.inet_ntoa(self.rd(4))
            elif atyp == 3:
                host = self.rd(self.rd(1)[0]).decode()
            else:
                host = socket.inet_ntop(socket.AF_INET6, self.rd(16))
            port = struct.unpack('!H', self.rd(2))[0]
            log('socks', f'CONNECT atyp={atyp} host={host} port={port} user={user}')
            addr = NAMES.get(host, host)
            up = socket.create_connection((addr, port), timeout=10)
            self.request.sendall(b'\x05\x00\x00\x01' + socket.inet_aton('0.0.0.0') + b'\x00\x00')
        except (EOFError, OSError):
            return
        up.settimeout(None)

        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

        t = threading.Thread(target=pipe, args=(up, self.request), daemon=True)
        t.start()
        pipe(self.request, up)
        t.join()
        up.close()


class TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(srv):
    threading.Thread(target=srv.serve_forever, daemon=True).start()


http_srv = TServer(('0.0.0.0', 80), Echo)
serve(TServer6(('::', 80), Echo))
https_srv = TServer(('0.0.0.0', 443), Echo)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
https_srv.socket = ctx.wrap_socket(https_srv.socket, server_side=True)
for s in (http_srv, https_srv, TCP(('0.0.0.0', 7), EchoEOF), TCP(('0.0.0.0', 9), Sink), TCP(('198.18.0.1', 1080), Socks)):
    serve(s)
open(f'{DIR}/servers.ready', 'w').close()
threading.Event().wait()
