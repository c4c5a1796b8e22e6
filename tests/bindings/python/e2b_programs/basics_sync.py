# An E2B program (sync SDK); only the import lines differ from E2B's:
#   from e2b import Sandbox, CommandExitException, SandboxQuery
from agent_sandbox.compat import Sandbox, CommandExitException, SandboxQuery, FileType

sbx = Sandbox.create(metadata={"prog": "basics_sync"}, timeout=120)
print("running", sbx.is_running())

result = sbx.commands.run('echo "hello from e2b"')
print(result.stdout.strip(), result.exit_code)

try:
    sbx.commands.run("echo oops >&2; exit 3")
except CommandExitException as e:
    print("exit", e.exit_code, e.stderr.strip())

sbx.files.write("/home/user/hello.txt", "hi there")
print(sbx.files.read("/home/user/hello.txt"))
print(type(sbx.files.read("/home/user/hello.txt", format="bytes")).__name__)
sbx.files.write_files([{"path": "/home/user/a.txt", "data": "A"},
                       {"path": "/home/user/b.txt", "data": b"B"}])
names = sorted(f.name for f in sbx.files.list("/home/user") if f.type == FileType.FILE and not f.name.startswith("."))
print(names)
print(sbx.files.exists("/home/user/a.txt"), sbx.files.make_dir("/home/user/d"))

handle = sbx.commands.run("sleep 0.3; echo bg", background=True)
print("bg", handle.wait().stdout.strip())

paginator = Sandbox.list(query=SandboxQuery(metadata={"prog": "basics_sync"}))
items = paginator.next_items()
print("listed", [i.sandbox_id for i in items] == [sbx.sandbox_id], paginator.has_next)

info = Sandbox.get_info(sbx.sandbox_id)
print("info", info.template_id, info.metadata["prog"])
Sandbox.set_timeout(sbx.sandbox_id, 60)
print("host", sbx.get_host(3000).startswith("3000-"))
same = Sandbox.connect(sbx.sandbox_id)
print("connected", same.commands.run("echo again").stdout.strip())
print("killed", Sandbox.kill(sbx.sandbox_id), sbx.kill())
