"""E2B's Secret (agent_sandbox.compat, only the import changed from e2b):
store an API key once, give a sandbox an egress rule that sends it as a
header to one host, and see that nothing the sandbox (or get_info) shows
holds the value: the engine's egress proxy puts it into the request it
sends on (docs/egress.md). The example sends no request itself.
SPDX-License-Identifier: Apache-2.0"""

import os

from agent_sandbox.compat import Sandbox, Secret

name = f"example-key-{os.getpid()}"
info = Secret.create(name, "sk-example-value", metadata={"owner": "examples"})
try:
    print("created", info.name, "version", info.version, info.metadata)
    print("rotated to version", Secret.update(name, "sk-example-value-2").version)
    p = Secret.list(limit=50)
    names = []
    while p.has_next:
        names += [s.name for s in p.next_items()]
    print("listed", name in names)

    auth = f"Bearer {Secret.fill(name)}"  # "${e2b.secrets.<name>}"
    network = {"rules": {"api.example.com": [{"transform": {"headers": {"Authorization": auth}}}]}}
    with Sandbox.create(network=network, timeout=60) as sbx:
        rule = sbx.get_info().network["rules"]["api.example.com"][0]
        print("rule", rule["transform"]["headers"]["Authorization"])
        env = sbx.commands.run("env; cat /etc/hosts").stdout
        print("value in the sandbox:", "sk-example" in env)
finally:
    print("destroyed", Secret.destroy(name), "exists", Secret.exists(name))
