"""What the Python binding and agent_sandbox.compat send for E2B's network
options (``allow_internet_access``, ``network``, ``update_network``) and
how they read ``get_info``'s network back: E2B's Python names mapped to
its wire names, callable selectors and transforms resolved as E2B's SDK
resolves them. The server is a canned responder on loopback standing for
the control plane (the engine's side is tested end to end in
test_network.py); no engine is needed here.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_sandbox import Sandbox as AsyncNative
from agent_sandbox import InvalidArgumentException
from agent_sandbox import compat
from agent_sandbox.sync import Sandbox

SID = "n0net0test"
DETAIL = {
    "sandboxID": SID, "templateID": "base", "envdVersion": "0.6.13",
    "allowInternetAccess": False,
    "network": {"allowOut": ["198.18.0.10", "*.example.test"], "denyOut": ["0.0.0.0/0"],
                "rules": {"api.example.test": [{"transform": {"headers": {"X-A": "b"}}}]},
                "egressProxy": {"address": "198.18.0.20:1080", "username": "u"},
                "allowPublicTraffic": False, "maskRequestHost": "${PORT}-x.example.test"},
}


class _Handler(BaseHTTPRequestHandler):
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
        self.server.requests.append((self.command, self.path, json.loads(raw) if raw else None))

    def do_POST(self):
        self._record()
        self._reply(201, {"sandboxID": SID, "templateID": "base", "envdVersion": "0.6.13",
                          "envdAccessToken": "tok", "domain": "localhost"})

    def do_PUT(self):
        self._record()
        self._reply(204)

    def do_GET(self):
        self._record()
        if self.path.startswith("/v2/sandboxes"):
            self._reply(200, [DETAIL])
        else:
            self._reply(200, DETAIL)


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.requests = []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    srv.conn = dict(api_url=url, api_key="k", sandbox_url=url, max_retries=-1)
    yield srv
    srv.shutdown()
    srv.server_close()


def last(server):
    return server.requests[-1]


def test_native_create_maps_python_names_to_e2b_wire(server):
    rules = {"api.example.test": [{"transform": {"headers": {"Authorization": "Bearer x"}}}]}
    Sandbox.create(allow_internet_access=False, network={
        "allow_out": lambda ctx: list(ctx.rules) + ["198.18.0.10"],
        "deny_out": lambda ctx: [ctx.all_traffic],
        "rules": rules,
        "egress_proxy": {"address": "198.18.0.20:1080", "username": "u", "password": None},
        "allow_public_traffic": False,
        "mask_request_host": "${PORT}-x.example.test",
    }, **server.conn)
    method, path, body = last(server)
    assert (method, path) == ("POST", "/v2/sandboxes")
    assert body["allow_internet_access"] is False
    assert body["network"] == {
        "allowOut": ["api.example.test", "198.18.0.10"],
        "denyOut": ["0.0.0.0/0"],
        "rules": rules,
        "egressProxy": {"address": "198.18.0.20:1080", "username": "u"},
        "allowPublicTraffic": False,
        "maskRequestHost": "${PORT}-x.example.test",
    }


def test_native_defaults_send_nothing(server):
    Sandbox.create(**server.conn)
    body = last(server)[2]
    assert "allow_internet_access" not in body and "network" not in body
    # E2B's wire names work as well
    Sandbox.create(network={"denyOut": ["198.18.0.0/15"]}, allow_internet_access=True,
                   **server.conn)
    body = last(server)[2]
    assert body["network"] == {"denyOut": ["198.18.0.0/15"]}
    assert body["allow_internet_access"] is True
    # the local engine's own limits, by their Python names
    Sandbox.create(network={"max_connections": 8, "egress_bytes_per_second": 1000000},
                   **server.conn)
    assert last(server)[2]["network"] == {"maxConnections": 8, "egressBytesPerSecond": 1000000}


def test_mistakes_are_refused_before_sending(server):
    n = len(server.requests)
    with pytest.raises(InvalidArgumentException, match="allowout"):
        Sandbox.create(network={"allowout": ["198.18.0.1"]}, **server.conn)
    with pytest.raises(InvalidArgumentException, match="allow_out"):
        Sandbox.create(network={"allow_out": "198.18.0.1"}, **server.conn)
    with pytest.raises(InvalidArgumentException, match="address"):
        Sandbox.create(network={"egress_proxy": {}}, **server.conn)
    with pytest.raises(InvalidArgumentException, match="allow_public_traffic|allowPublicTraffic"):
        Sandbox.create(network={"allow_public_traffic": "no"}, **server.conn)
    assert len(server.requests) == n


def test_transform_callables_get_placeholders(server):
    Sandbox.create(network={"allow_out": ["api.example.test"], "rules": {
        "api.example.test": [{"transform": lambda ctx: {
            "headers": {"Authorization": f"Bearer {ctx.iam.tokens['aws']}"}}}]}}, **server.conn)
    rule = last(server)[2]["network"]["rules"]["api.example.test"][0]
    assert rule == {"transform": {"headers": {
        "Authorization": "Bearer ${e2b.identity.tokens.aws}"}}}


def test_update_network_puts_the_update_config(server):
    sb = Sandbox.create(**server.conn)
    sb.update_network({"allow_out": ["198.18.0.10"], "allow_internet_access": False})
    method, path, body = last(server)
    assert (method, path) == ("PUT", f"/sandboxes/{SID}/network")
    assert body == {"allowOut": ["198.18.0.10"], "allow_internet_access": False}
    sb.update_network()
    assert last(server)[2] == {}
    with pytest.raises(InvalidArgumentException, match="allowPublicTraffic"):
        sb.update_network({"allow_public_traffic": False})
    Sandbox.update_network_by_id(SID, {"deny_out": ["198.18.0.66"]}, **server.conn)
    assert last(server)[:2] == ("PUT", f"/sandboxes/{SID}/network")
    assert last(server)[2] == {"denyOut": ["198.18.0.66"]}


def test_get_info_reads_the_network_with_python_names(server):
    info = Sandbox.create(**server.conn).get_info()
    assert info.allow_internet_access is False
    assert info.network == {
        "allow_out": ["198.18.0.10", "*.example.test"],
        "deny_out": ["0.0.0.0/0"],
        "rules": {"api.example.test": [{"transform": {"headers": {"X-A": "b"}}}]},
        "egress_proxy": {"address": "198.18.0.20:1080", "username": "u"},
        "allow_public_traffic": False,
        "mask_request_host": "${PORT}-x.example.test",
    }


def test_async_native(server):
    async def go():
        sb = await AsyncNative.create(network={"allow_out": ["198.18.0.10"]},
                                      allow_internet_access=False, **server.conn)
        body = last(server)[2]
        assert body["network"] == {"allowOut": ["198.18.0.10"]}
        await sb.update_network({"deny_out": ["198.18.0.11"]}, allow_internet_access=True)
        assert last(server)[2] == {"denyOut": ["198.18.0.11"], "allow_internet_access": True}
        assert (await sb.get_info()).network["deny_out"] == ["0.0.0.0/0"]
    asyncio.run(go())


def test_compat_sync_and_async(server):
    sb = compat.Sandbox.create(allow_internet_access=False,
                               network={"allow_out": ["198.18.0.10"]}, **server.conn)
    body = last(server)[2]
    assert body["allow_internet_access"] is False
    assert body["network"] == {"allowOut": ["198.18.0.10"]}
    compat.Sandbox.create(**server.conn)
    assert last(server)[2]["allow_internet_access"] is True  # E2B's default, sent as E2B does
    sb.update_network({"allow_out": ["198.18.0.12"]})
    assert last(server)[2] == {"allowOut": ["198.18.0.12"]}
    compat.Sandbox.update_network(SID, {"deny_out": ["198.18.0.13"]}, **server.conn)
    assert last(server)[:2] == ("PUT", f"/sandboxes/{SID}/network")
    assert last(server)[2] == {"denyOut": ["198.18.0.13"]}
    assert sb.get_info().network["allow_out"] == ["198.18.0.10", "*.example.test"]

    async def go():
        a = await compat.AsyncSandbox.create(network={"deny_out": ["198.18.0.14"]},
                                             **server.conn)
        assert last(server)[2]["network"] == {"denyOut": ["198.18.0.14"]}
        await a.update_network({"allow_internet_access": False})
        assert last(server)[2] == {"allow_internet_access": False}
        await compat.AsyncSandbox.update_network(SID, {}, **server.conn)
        assert last(server)[2] == {}
        assert (await a.get_info()).allow_internet_access is False
    asyncio.run(go())


def test_compat_exports_e2bs_network_names():
    from agent_sandbox.compat import (ALL_TRAFFIC, SandboxNetworkOpts,  # noqa: F401
                                      SandboxNetworkSelectorContext, SandboxNetworkUpdate)
    assert ALL_TRAFFIC == "0.0.0.0/0"
    opts: SandboxNetworkOpts = {"deny_out": [ALL_TRAFFIC]}
    assert compat.Sandbox is not None and opts["deny_out"] == ["0.0.0.0/0"]


def test_transform_token_lookups_never_give_none(server):
    # ctx.iam.tokens.get(name) is the placeholder, as [name] is (it gave
    # None, which shipped the header "Bearer None"); a name that cannot be
    # in a placeholder is refused before sending
    Sandbox.create(network={"rules": {"api.example.test": [{"transform": lambda ctx: {
        "headers": {"A": f"{ctx.iam.tokens.get('gcp')}"}}}]}}, **server.conn)
    rule = last(server)[2]["network"]["rules"]["api.example.test"][0]
    assert rule == {"transform": {"headers": {"A": "${e2b.identity.tokens.gcp}"}}}
    n = len(server.requests)
    with pytest.raises(InvalidArgumentException, match="is not usable"):
        Sandbox.create(network={"rules": {"h": [{"transform": lambda ctx: {
            "headers": {"A": ctx.iam.tokens["a}b"]}}}]}}, **server.conn)
    with pytest.raises(InvalidArgumentException, match="must return a transform dict"):
        Sandbox.create(network={"rules": {"h": [{"transform": lambda ctx: "x"}]}}, **server.conn)
    assert len(server.requests) == n


def test_compat_network_helpers():
    # E2B's e2b.sandbox.sandbox_api helpers: snake_case fields with models,
    # a transform sees only the tokens iam registers, the info drops the
    # proxy's password
    from agent_sandbox.compat import (Secret, build_iam_config, build_network_config,
                                      build_network_update_body, from_client_network_config)
    from agent_sandbox.compat.api.client.models import (SandboxEgressProxyConfigType0,
                                                        SandboxNetworkConfig)

    iam = build_iam_config({"tokens": {"aws": Secret.iam_token(audience="a", token_type="JWT-SVID")}})
    net = {"allow_out": lambda ctx: list(ctx.rules), "egress_proxy": {"address": "p:1", "x": 1},
           "rules": {"h": [{"transform": lambda ctx: {
               "headers": {"T": ",".join(ctx.iam.tokens), "A": ctx.iam.tokens["aws"]}}}]}}
    body = build_network_config(net, iam)
    assert body["allow_out"] == ["h"] and body["egress_proxy"].to_dict() == {"address": "p:1"}
    assert body["rules"].to_dict() == {"h": [{"transform": {"headers": {
        "T": "aws", "A": "${e2b.identity.tokens.aws}"}}}]}
    typo = {"rules": {"h": [{"transform": lambda ctx: {"headers": {"A": ctx.iam.tokens.get("awz")}}}]}}
    with pytest.raises(InvalidArgumentException, match="Registered tokens: 'aws'"):
        build_network_config(typo, iam)
    with pytest.raises(InvalidArgumentException, match="not registered"):
        build_network_config(typo)
    assert build_network_update_body({}).to_dict() == {}
    assert build_network_update_body(typo).to_dict()["rules"]["h"][0]["transform"]["headers"] == \
        {"A": "${e2b.identity.tokens.awz}"}
    info = from_client_network_config(SandboxNetworkConfig(
        allow_out=["x"], egress_proxy=SandboxEgressProxyConfigType0("p:1", "u", "secret")))
    assert info == {"allow_out": ["x"], "egress_proxy": {"address": "p:1", "username": "u"}}
