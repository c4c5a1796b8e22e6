"""Loaded into the Python that runs E2B's suite (tests/e2b-python/run.sh
puts this directory on PYTHONPATH; never part of the library).

Python resolves names with glibc's getaddrinfo, which on a stock Debian (no
nss-myhostname, no systemd-resolved) does not know RFC 6761's *.localhost,
so E2B's tests that fetch https://<port>-<id>.localhost:<engine port> (what
get_host, download_url and upload_url give) fail with a name resolution
error before reaching the engine. This answers loopback for those names, as
systemd-resolved and nss-myhostname do, and leaves every other name to
glibc: the Python twin of tests/e2b-js/localhost-dns.cjs. (Users on such a
host use loopback URLs instead: docs/engine.md.)

No Debian library does this (python3-dnspython resolves through DNS
servers, which do not answer for .localhost either), hence these lines.
Debian's own sitecustomize (/etc/python3.X) is loaded after, as it would
be without this one.
SPDX-License-Identifier: Apache-2.0
"""

import os
import socket
import sys

_getaddrinfo = socket.getaddrinfo


def _is_localhost_name(host):
    if isinstance(host, (bytes, bytearray)):
        try:
            host = bytes(host).decode("ascii")
        except UnicodeDecodeError:
            return False
    if not isinstance(host, str):
        return False
    name = host.rstrip(".").lower()
    return name.endswith(".localhost")


def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    if _is_localhost_name(host):
        # the loopback address of the family asked for (the engine listens
        # on 127.0.0.1; an AF_INET6-only caller gets ::1, as resolved gives)
        addr = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        return _getaddrinfo(addr, port, family, type, proto, flags | socket.AI_NUMERICHOST)
    return _getaddrinfo(host, port, family, type, proto, flags)


getaddrinfo.__doc__ = _getaddrinfo.__doc__
socket.getaddrinfo = getaddrinfo


def _chain():
    """Run the sitecustomize this one shadows, if there is one."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception:  # as site.py does for a failing sitecustomize
        pass


_chain()
