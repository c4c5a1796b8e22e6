"""E2B's Template builder in Python, through agent_sandbox.compat (the same
program as E2B's, with only the import changed) on the C library's
asb_templates_build_steps: a template from ``base`` with a file copied in
from a local context directory, an env var, a workdir and a start command
with a ready check; then a sandbox of it asks the server the start command
runs, and a step that fails shows the line that added it.

    python3 examples/python/e2b_template.py

Needs only a running engine (or ASB_STATE_DIR); docs/templates.md, "E2B's
Template builder".
SPDX-License-Identifier: Apache-2.0
"""

import os
import traceback

from agent_sandbox.compat import (BuildException, Sandbox, Template, default_build_logger,
                                  wait_for_url)

# examples/e2b-template/app/server.py: a tiny HTTP server saying $GREETING
CONTEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2b-template")

template = (
    Template(file_context_path=CONTEXT)
    .from_template("base")  # or from_base_image(): E2B's base image is our base template
    .copy("app", "/opt/app", user="root")  # less what e2b-template/.dockerignore leaves out
    .set_envs({"GREETING": "hello from a template built with E2B's Python builder"})
    .run_cmd('python3 -c "import http.server"')  # steps run as `user` unless told otherwise
    .set_workdir("/opt/app")
    .set_start_cmd("python3 server.py", wait_for_url("http://127.0.0.1:8000/"))
)

info = Template.build(template, "py-e2b-builder-example:v1", cpu_count=1, memory_mb=512,
                      on_build_logs=default_build_logger(min_level="warn"))
print(f"built {info.name}: tags {info.tags}, exists: {Template.exists('py-e2b-builder-example')}")

sbx = Sandbox.create("py-e2b-builder-example", timeout=60)
try:
    r = sbx.commands.run("python3 -c \"import urllib.request as u; "
                         "print(u.urlopen('http://127.0.0.1:8000/').read().decode(), end='')\"")
    print(f"the start command's server says: {r.stdout}", end="")
finally:
    sbx.kill()

broken = Template().from_template("base").run_cmd("echo about to fail; exit 3")
try:
    Template.build(broken, "py-e2b-builder-broken")
except BuildException as e:
    where = traceback.extract_tb(e.__traceback__)[-1]
    print(f"build failed at {os.path.basename(where.filename)}:{where.lineno}: "
          f"{str(e).splitlines()[0]}")

from agent_sandbox import templates  # noqa: E402  (clean up: the native API)

templates.delete_sync("py-e2b-builder-example")
