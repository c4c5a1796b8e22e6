"""Java in the code interpreter (an E2B program, only the imports changed):
cells run in one JShell session per context, so declarations persist; the
last expression's value is the result; System.out is the stdout log; an
exception is the execution's error. The JVM starts on the first java cell.
SPDX-License-Identifier: Apache-2.0"""
from agent_sandbox.compat.code_interpreter import Sandbox

with Sandbox.create() as sbx:
    sbx.run_code("""
record Point(int x, int y) {
  double norm() { return Math.sqrt(x * x + y * y); }
}
var points = new ArrayList<Point>();
""", language="java")
    ex = sbx.run_code("""
points.add(new Point(3, 4));
System.out.println("points: " + points);
points.get(0).norm()
""", language="java")
    print("stdout:", "".join(ex.logs.stdout).strip())
    print("result:", ex.text)

    ex = sbx.run_code('System.getProperty("GREETING") + ", " + points.size()', language="java",
                      envs={"GREETING": "hello"})  # env vars are system properties in java
    print("envs:", ex.text)

    ex = sbx.run_code("points.get(5)", language="java")
    print("error:", ex.error.name, "|", ex.error.value)
