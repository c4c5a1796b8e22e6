"""net.client_python: sandbox networking through the Python binding and
agent_sandbox.compat against the real engine, run with the network on inside
the closed topology (tests/support/in_net_topo.sh; not a python.* test,
those run with the network off): create with allow_internet_access=False and
network deny/allow lists, read the config back, update it live (async,
sync, compat, by id), the engine's refusals. What the rules do to packets
is the datapath's tests' (closed topology); no packet is sent here.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_sandbox import InvalidArgumentException, Sandbox, SandboxNotFoundException
from agent_sandbox import compat


def test_async_create_read_update(engine):
    async def go():
        sb = await Sandbox.create(timeout=120, allow_internet_access=False, network={
            "allow_out": ["198.18.0.10", "*.example.test"], "deny_out": ["198.18.0.66"]})
        try:
            info = await sb.get_info()
            assert info.allow_internet_access is False
            assert set(info.network["allow_out"]) == {"198.18.0.10", "*.example.test"}
            assert info.network["deny_out"] == ["198.18.0.66"]
            await sb.update_network({"deny_out": ["198.18.2.0/24"]}, allow_internet_access=True)
            info = await sb.get_info()
            assert info.allow_internet_access is True
            assert info.network["deny_out"] == ["198.18.2.0/24"]
            assert not info.network.get("allow_out")
            with pytest.raises(InvalidArgumentException, match="198.18.0.0/99"):
                await sb.update_network({"allow_out": ["198.18.0.0/99"]})
            assert (await sb.get_info()).network["deny_out"] == ["198.18.2.0/24"]
        finally:
            await sb.kill()
        with pytest.raises(SandboxNotFoundException):
            await sb.update_network({})
    asyncio.run(go())


def test_sync_and_by_id(engine):
    sb = Sandbox.create_sync(timeout=120, network={"deny_out": ["198.18.0.0/15"]})
    try:
        info = sb.get_info_sync()
        assert info.network["deny_out"] == ["198.18.0.0/15"]
        assert info.allow_internet_access is not False
        sb.sync.update_network({"allow_out": ["198.18.0.10"]}, allow_internet_access=False)
        asyncio.run(Sandbox.update_network_by_id(sb.sandbox_id, {"deny_out": ["198.18.0.77"]},
                                                 allow_internet_access=False))
        info = sb.get_info_sync()
        assert info.network["deny_out"] == ["198.18.0.77"]
        assert info.allow_internet_access is False
    finally:
        sb.kill_sync()
    with pytest.raises(InvalidArgumentException):
        Sandbox.create_sync(network={"allow_out": ["not a destination"]})


def test_compat(engine):
    sb = compat.Sandbox.create(timeout=120, allow_internet_access=False,
                               network={"deny_out": [compat.ALL_TRAFFIC],
                                        "allow_out": ["198.18.0.10"]})
    try:
        info = sb.get_info()
        assert info.allow_internet_access is False
        assert info.network["allow_out"] == ["198.18.0.10"]
        sb.update_network({"allow_out": ["198.18.0.11"], "allow_internet_access": False})
        assert compat.Sandbox.get_info(sb.sandbox_id).network["allow_out"] == ["198.18.0.11"]
        compat.Sandbox.update_network(sb.sandbox_id, {"allow_out": ["198.18.0.12"]})
        assert sb.get_info().network["allow_out"] == ["198.18.0.12"]
    finally:
        sb.kill()

    async def go():
        a = await compat.AsyncSandbox.create(timeout=120, network={"deny_out": ["198.18.0.13"]})
        try:
            await a.update_network({"deny_out": ["198.18.0.14"]})
            assert (await a.get_info()).network["deny_out"] == ["198.18.0.14"]
        finally:
            await a.kill()
    asyncio.run(go())


def test_example(engine):
    ex = Path(__file__).resolve().parents[3] / "examples" / "python" / "network.py"
    r = subprocess.run([sys.executable, str(ex)], env=engine.env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "created: internet False" in r.stdout and "198.18.0.66" in r.stdout
    assert "updated: network" in r.stdout and "198.18.1.0/24" in r.stdout
    assert "refused:" in r.stdout and "allowout" in r.stdout
