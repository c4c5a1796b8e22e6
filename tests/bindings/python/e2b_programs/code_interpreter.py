# An e2b_code_interpreter program; only the import line differs:
#   from e2b_code_interpreter import Sandbox
from agent_sandbox.compat.code_interpreter import Sandbox

with Sandbox.create() as sandbox:
    sandbox.run_code("x = 1")
    execution = sandbox.run_code("x += 1; x")
    print(execution.text)
    printed = sandbox.run_code("print('only printed')")
    print(printed.text, printed.logs.stdout)
    lines = []
    sandbox.run_code("print('streamed')", on_stdout=lambda msg: lines.append(msg.line))
    print(lines)
    err = sandbox.run_code("undefined_name")
    print(err.error.name)
    ctx = sandbox.create_code_context()
    sandbox.run_code("z = 5", context=ctx)
    print(sandbox.run_code("z * 2", context=ctx).text)
