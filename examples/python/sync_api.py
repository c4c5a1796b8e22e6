"""The blocking API: agent_sandbox.sync.Sandbox (= SandboxSync), and the
async API's *_sync twins. SPDX-License-Identifier: Apache-2.0"""
from agent_sandbox import Sandbox, SandboxSync

with SandboxSync.create() as sandbox:
    print(sandbox.commands.run("echo blocking").stdout.strip())
    sandbox.files.write("/tmp/x", "y")
    print(sandbox.files.read("/tmp/x"))
    handle = sandbox.commands.run("echo a; echo b", background=True)
    for stdout, stderr, _ in handle:          # output as it arrives
        print("got", stdout.strip())

with Sandbox.create_sync() as sandbox:        # the async class, used with its twins
    print(sandbox.commands.run_sync("echo twin").stdout.strip())
    print(sandbox.get_info_sync().state.value)
