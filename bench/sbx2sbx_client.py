#!/usr/bin/env python3
"""The client of bench/sbx2sbx_bench.sh: N GET /headers to a sandbox URL
through 127.0.0.1:PORT with the URL's host as Host (and SNI), the same
code on the host (the engine's port) and in a sandbox (its portal).
Modes: new (a new TCP connection per request), keep (one keep-alive
connection), tls (a new TLS connection per request). Prints one JSON line
{mode: [ms, ...]}.
usage: sbx2sbx_client.py PORT HOST N CAFILE MODE... (python3 stdlib only)
SPDX-License-Identifier: Apache-2.0"""
import json
import socket
import ssl
import sys
import time


def read_response(f):
    status = f.readline()
    if not status.startswith(b"HTTP/1.1 200"):
        raise SystemExit("bad response: %r %r" % (status, f.read(300)))
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    f.read(length)


def main():
    port, host, n, cafile = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    req = ("GET /headers HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode()
    ctx = ssl.create_default_context(cafile=cafile)
    name = host.rsplit(":", 1)[0]
    out = {}
    for mode in sys.argv[5:]:
        times = []
        keep = None
        for _ in range(n):
            t0 = time.perf_counter()
            if mode == "keep" and keep:
                s, f = keep
            else:
                s = socket.create_connection(("127.0.0.1", port))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if mode == "tls":
                    s = ctx.wrap_socket(s, server_hostname=name)
                f = s.makefile("rb")
            s.sendall(req)
            read_response(f)
            if mode == "keep":
                keep = (s, f)
            else:
                f.close()
                s.close()
            times.append((time.perf_counter() - t0) * 1000)
        if keep:
            keep[1].close()
            keep[0].close()
        out[mode] = times
    print(json.dumps(out))


main()
