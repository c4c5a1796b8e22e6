"""An E2B program: only the import line changed (from e2b import Sandbox).
SPDX-License-Identifier: Apache-2.0"""
from agent_sandbox.compat import Sandbox

sbx = Sandbox.create()
print(sbx.commands.run("echo hello from an E2B program").stdout.strip())
sbx.files.write("/home/user/f.txt", "data")
print([f.name for f in sbx.files.list("/home/user") if not f.name.startswith(".")])
sbx.kill()
