"""Sandbox networking (E2B's allow_internet_access and network): a sandbox
whose egress is off except for an allow-list, its effective config read
back, then changed live. No traffic is sent: the addresses are in
198.18.0.0/15 (the benchmarking range, RFC 2544).
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import InvalidArgumentException, Sandbox


async def main():
    sandbox = await Sandbox.create(timeout=120, allow_internet_access=False, network={
        "allow_out": ["198.18.0.0/24", "example.test", "*.example.test"],
        "deny_out": ["198.18.0.66"],
    })
    try:
        info = await sandbox.get_info()
        print("created: internet", info.allow_internet_access, "network", info.network)
        # live: a new allow-list replaces the old one; deny_out, left out, is cleared
        await sandbox.update_network({"allow_out": ["198.18.1.0/24"]},
                                     allow_internet_access=False)
        info = await sandbox.get_info()
        print("updated: network", info.network)
        try:  # a mistake is caught before anything is sent, naming the member
            await sandbox.update_network({"allowout": []})
        except InvalidArgumentException as e:
            print("refused:", e)
    finally:
        await sandbox.kill()


asyncio.run(main())
