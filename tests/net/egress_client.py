#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Client checks net.egress.* runs inside the sandbox netns.

  dns-tcp NAME SERVER [TYPE] query A (or AAAA, TXT) over TCP; print rcode and
                            addresses
  halfclose HOST PORT SIZE  send SIZE bytes, shut down writing, print the reply
  hostswitch ADDR H1 H2      two requests on one connection to ADDR:80, Host
                            H1 then H2; print both status lines
  sink HOST PORT MIB         send MIB MiB, print the count received and seconds
  latency HOST PORT N HOST   N new connections with one GET each; print ms
  hold HOST PORT N          open N connections, send a byte on each, print
                            'opened', keep them until stdin ends
"""
import hashlib
import os
import socket
import struct
import sys
import time


def dns_tcp(name, server, qtype='A'):
    qt = {'A': 1, 'AAAA': 28, 'TXT': 16}[qtype]
    q = struct.pack('!HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split('.'):
        q += bytes([len(label)]) + label.encode()
    q += b'\x00' + struct.pack('!HH', qt, 1)
    s = socket.create_connection((server, 53), timeout=20)
    s.sendall(struct.pack('!H', len(q)) + q)
    n = struct.unpack('!H', recv_n(s, 2))[0]
    r = recv_n(s, n)
    rcode = r[3] & 15
    an = struct.unpack('!H', r[6:8])[0]
    addrs = []
    if an:  # our own queries' answers: compressed owner names, A records
        at = len(q)
        for _ in range(an):
            at += 2 if r[at] & 0xC0 == 0xC0 else r.index(0, at) + 1 - at
            typ, _, _, rdlen = struct.unpack('!HHIH', r[at:at + 10])
            at += 10
            if typ == 1:
                addrs.append(socket.inet_ntoa(r[at:at + rdlen]))
            elif typ == 28:
                addrs.append(socket.inet_ntop(socket.AF_INET6, r[at:at + rdlen]))
            at += rdlen
    print(f'rcode={rcode} id={struct.unpack("!H", r[:2])[0]:#x} addrs={",".join(addrs)}')


def recv_n(s, n):
    b = b''
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            raise EOFError
        b += k
    return b


def halfclose(host, port, size):
    data = os.urandom(size)
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    reply = b''
    while True:
        k = s.recv(65536)
        if not k:
            break
        reply += k
    want = f'{size} {hashlib.sha256(data).hexdigest()}'
    print('ok' if reply.decode().strip() == want else f'bad {reply!r} want {want}')


def hold(host, port, n):
    socks = []
    for _ in range(int(n)):
        try:  # the one over the cap is reset, maybe before connect returns
            s = socket.create_connection((host, int(port)), timeout=60)
            s.sendall(b'x')
            socks.append(s)
        except OSError:
            pass
    print('opened', flush=True)
    sys.stdin.read()  # the driver has seen the proxy's counters
    for s in socks:
        s.close()


def hostswitch(addr, first, second):
    s = socket.create_connection((addr, 80), timeout=30)
    f = s.makefile('rb')
    out = []
    for host in (first, second):
        s.sendall(f'GET /switch HTTP/1.1\r\nHost: {host}\r\n\r\n'.encode())
        status = f.readline().decode().strip()
        n = 0
        while True:
            line = f.readline()
            if not line or line in (b'\r\n', b'\n'):
                break
            if line.lower().startswith(b'content-length:'):
                n = int(line.split(b':')[1])
        f.read(n)
        out.append(status or 'closed')
    print(' | '.join(out))


def sink(host, port, mib):
    buf = b'\0' * (1 << 20)
    t0 = time.monotonic()
    s = socket.create_connection((host, int(port)), timeout=60)
    for _ in range(int(mib)):
        s.sendall(buf)
    s.shutdown(socket.SHUT_WR)
    got = s.makefile().readline().strip()
    dt = time.monotonic() - t0
    print(f'{got} {dt:.6f}')


def latency(host, port, n, hosthdr):
    req = f'GET /lat HTTP/1.1\r\nHost: {hosthdr}\r\nConnection: close\r\n\r\n'.encode()
    out = []
    for _ in range(int(n)):
        t0 = time.monotonic()
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(req)
        while s.recv(65536):
            pass
        s.close()
        out.append((time.monotonic() - t0) * 1000)
    print(' '.join(f'{x:.3f}' for x in out))


cmd = sys.argv[1]
if cmd == 'dns-tcp':
    dns_tcp(*sys.argv[2:5])
elif cmd == 'halfclose':
    halfclose(sys.argv[2], sys.argv[3], int(sys.argv[4]))
elif cmd == 'hostswitch':
    hostswitch(*sys.argv[2:5])
elif cmd == 'sink':
    sink(*sys.argv[2:5])
elif cmd == 'latency':
    latency(*sys.argv[2:6])
elif cmd == 'hold':
    hold(*sys.argv[2:5])
