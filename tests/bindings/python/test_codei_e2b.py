"""E2B code interpreter parity through agent_sandbox.compat: typed charts
(the figures of E2B's own chart tests), DataFrames, PIL images, JSON, the
javascript default context, TypeScript/ESM cells, R, Java, the kernel's user and
cwd, ConnectionConfig, and E2B's error for a sandbox killed during run_code.
One code-interpreter-v1 sandbox for the read-only checks.
SPDX-License-Identifier: Apache-2.0"""

import json
import shutil
import threading

import pytest

from agent_sandbox.compat import TimeoutException
from agent_sandbox.compat.code_interpreter import Sandbox
from agent_sandbox.compat.code_interpreter.charts import (
    BarChart,
    BoxAndWhiskerChart,
    Chart,
    ChartType,
    LineChart,
    PieChart,
    ScaleType,
    ScatterChart,
    SuperChart,
)
from agent_sandbox.compat.code_interpreter.code_interpreter_async import AsyncSandbox
from agent_sandbox.compat.code_interpreter.code_interpreter_sync import Sandbox as SyncSandbox
from agent_sandbox.compat.connection_config import ConnectionConfig


@pytest.fixture(scope="module")
def sbx(engine):
    s = Sandbox.create(timeout=600)
    yield s
    s.kill()


def chart_of(sbx, code):
    ex = sbx.run_code(code)
    assert ex.error is None, ex.error
    charts = [r for r in ex.results if r.chart is not None]
    assert len(charts) == 1, ex.results
    assert charts[0].png  # the figure still comes as a png too
    return charts[0].chart


def test_module_names():
    assert SyncSandbox is Sandbox
    assert AsyncSandbox.default_template == "code-interpreter-v1"


def test_line_chart_with_dates_and_units(sbx):
    c = chart_of(sbx, """
import datetime, numpy as np, matplotlib.pyplot as plt
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(10)]
plt.figure(); plt.plot(dates, np.sin(np.arange(10)), label='sin(x)')
plt.plot(dates, np.cos(np.arange(10)))
plt.xlabel('Time (s)'); plt.ylabel('Amplitude [Hz]'); plt.title('waves'); plt.show()
""")
    assert isinstance(c, LineChart) and c.type == ChartType.LINE
    assert (c.title, c.x_label, c.y_label, c.x_unit, c.y_unit) == (
        "waves", "Time (s)", "Amplitude [Hz]", "s", "Hz")
    assert c.x_scale == ScaleType.DATETIME and c.y_scale == ScaleType.LINEAR
    assert all(isinstance(t, str) for t in c.x_ticks)
    assert all(isinstance(t, float) for t in c.y_ticks)
    assert [e.label for e in c.elements] == ["sin(x)", "Line 1"]
    assert c.elements[0].points[0] == ("2023-09-01", 0.0)
    assert all(isinstance(p, tuple) and isinstance(p[1], float) for p in c.elements[0].points)


def test_log_and_categorical_scales(sbx):
    c = chart_of(sbx, "import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 10, 100], ['a', 'b', 'c'])\n"
                      "plt.xscale('log'); plt.show()")
    assert (c.x_scale, c.y_scale) == (ScaleType.LOG, ScaleType.CATEGORICAL)
    assert c.elements[0].points == [(1.0, "a"), (10.0, "b"), (100.0, "c")]


def test_bar_charts_vertical_and_horizontal(sbx):
    c = chart_of(sbx, "import matplotlib.pyplot as plt\nplt.figure()\n"
                      "plt.bar(['A', 'B', 'C'], [100, 200, 300], label='Books Sold')\n"
                      "plt.xlabel('Authors'); plt.ylabel('Sold'); plt.show()")
    assert isinstance(c, BarChart)
    assert [(b.label, b.group, b.value) for b in c.elements] == [
        ("A", "Books Sold", 100.0), ("B", "Books Sold", 200.0), ("C", "Books Sold", 300.0)]
    assert (c.x_label, c.y_label) == ("Authors", "Sold")
    # equal bars, horizontal: labels come from the y axis, which is the categories'
    h = chart_of(sbx, "import matplotlib.pyplot as plt\nplt.figure()\n"
                      "plt.barh(['x', 'y'], [5, 5]); plt.xlabel('n'); plt.ylabel('cat'); plt.show()")
    assert [(b.label, b.value) for b in h.elements] == [("x", 5.0), ("y", 5.0)]
    assert (h.x_label, h.y_label) == ("cat", "n")


def test_pie_and_box_and_whisker(sbx):
    p = chart_of(sbx, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                      "ax.pie([90, 10], labels=['No', 'Yes'], startangle=90)\nplt.title('q'); plt.show()")
    assert isinstance(p, PieChart) and p.title == "q"
    assert [(w.label, w.angle, w.radius) for w in p.elements] == [("No", 324.0, 1.0), ("Yes", 36.0, 1.0)]
    b = chart_of(sbx, """
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.boxplot([[85, 90, 78, 92, 88], [95, 89, 76, 91, 84, 87]], labels=['A', 'B'], patch_artist=True)
ax.set_ylabel('Score'); plt.show()
""")
    assert isinstance(b, BoxAndWhiskerChart) and b.y_label == "Score"
    assert [(e.label, e.min, e.first_quartile, e.median, e.third_quartile, e.max, e.outliers)
            for e in b.elements] == [("A", 78.0, 85.0, 88.0, 90.0, 92.0, []),
                                     ("B", 84.0, 84.75, 88.0, 90.5, 95.0, [76.0])]


def test_scatter_superchart_unknown_and_blank(sbx):
    s = chart_of(sbx, """
import matplotlib.pyplot as plt
fig, axs = plt.subplots(1, 2); fig.suptitle('Both')
axs[0].plot([0, 1, 2], [1, 0, 1]); axs[1].scatter([1, 2], [3, 4], label='pts'); plt.show()
""")
    assert isinstance(s, SuperChart) and s.title == "Both"
    assert [type(e) for e in s.elements] == [LineChart, ScatterChart]
    assert s.elements[1].elements[0].points == [(1.0, 3.0), (2.0, 4.0)]
    u = chart_of(sbx, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                      "ax.add_artist(plt.Circle((0, 0), 1)); plt.title('c'); plt.show()")
    assert type(u) is Chart and u.type == ChartType.UNKNOWN and u.elements == []
    # a figure without data: no chart
    ex = sbx.run_code("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nplt.show()")
    assert ex.results and ex.results[0].png and ex.results[0].chart is None


def test_chart_json_round_trip(sbx):
    ex = sbx.run_code("import matplotlib.pyplot as plt\nplt.figure(); plt.scatter([1], [2]); plt.show()")
    d = json.loads(ex.to_json())
    assert d["results"][0]["chart"]["type"] == "scatter"
    assert ex.results[0].chart.to_dict()["elements"][0]["points"] == [[1.0, 2.0]]


def test_dataframe_json_and_images(sbx):
    ex = sbx.run_code("import pandas as pd\n"
                      "pd.DataFrame({'a': [1, 2], 't': pd.to_datetime(['2024-01-02', None])})")
    r = ex.results[0]
    assert r.data == {"a": [1, 2], "t": ["2024-01-02T00:00:00", None]}
    assert "<table" in r.html and r.text
    assert sbx.run_code("[1, {'k': 2.5}]").results[0].json == [1, {"k": 2.5}]
    ex = sbx.run_code("from PIL import Image\nim = Image.new('RGB', (8, 8))\nim.show()\n"
                      "im.save('/tmp/im.png')\nprint('done')")
    assert len([r for r in ex.results if r.png]) == 2 and ex.logs.stdout == ["done\n"]
    assert sbx.files.read("/tmp/im.png", format="bytes")[:4] == b"\x89PNG"


def test_default_contexts_and_languages(sbx):
    langs = [c.language for c in sbx.list_code_contexts()]
    assert "python" in langs and "javascript" in langs
    assert sbx.run_code("process.cwd()", language="js").text == "/home/user"
    ex = sbx.run_code("import { readFileSync } from 'fs'\nconsole.log(typeof readFileSync)",
                      language="js")
    assert ex.logs.stdout == ["function\n"]
    ex = sbx.run_code('enum E { A, B }\nconst m: string = "Hello"; console.log(m, E.B)', language="ts")
    assert ex.error is None and ex.logs.stdout == ["Hello 1\n"]
    bad = sbx.run_code("const x: = 1", language="ts")
    assert bad.error is not None and bad.error.name == "SyntaxError"


@pytest.mark.skipif(not shutil.which("R"), reason="R (r-base-core, r-cran-irkernel) not installed")
def test_r_kernel(sbx):
    ex = sbx.run_code('Sys.getenv("FOO")', language="r", envs={"FOO": "bar"})
    assert ex.results[0].text == '[1] "bar"'
    assert sbx.run_code("getwd()", language="r").results[0].text == '[1] "/home/user"'


@pytest.mark.skipif(not shutil.which("java"), reason="java (openjdk-17-jdk-headless) not installed")
def test_java_kernel(sbx):
    # E2B's own java checks (stdout, cwd, env vars as system properties),
    # plus state, the value of the last expression and an error
    ex = sbx.run_code('System.out.println("Hello, World!")', language="java")
    # IJava's split: println's text, then its line end (test_java_kernel)
    assert ex.logs.stdout == ["Hello, World!", "\n"] and ex.error is None
    assert sbx.run_code('System.getProperty("user.dir")', language="java").text == "/home/user"
    ex = sbx.run_code('System.getProperty("FOO")', language="java", envs={"FOO": "bar"})
    assert ex.text == "bar"
    assert sbx.run_code('System.getProperty("FOO", "default")', language="java").text == "default"
    sbx.run_code("var m = new HashMap<String, Integer>(); m.put(\"a\", 1);", language="java")
    assert sbx.run_code('m.get("a") + 41', language="java").text == "42"
    bad = sbx.run_code("m.get(", language="java")
    assert bad.error is not None and bad.error.name == "CompilationException"
    boom = sbx.run_code('throw new RuntimeException("boom");', language="java")
    assert (boom.error.name, boom.error.value) == ("java.lang.RuntimeException", "boom")


def test_kernels_are_root_with_any_cwd(sbx):
    ctx = sbx.create_code_context(cwd="/root")
    assert ctx.cwd == "/root"
    assert sbx.run_code("import os; os.getuid(), os.getcwd()", context=ctx).text == "(0, '/root')"
    assert sbx.run_code("import os; os.getcwd()").text == "/home/user"
    sbx.remove_code_context(ctx)


def test_connection_config(engine, monkeypatch):
    monkeypatch.setenv("E2B_DOMAIN", "example.dev")
    cfg = ConnectionConfig(request_timeout=5)
    assert cfg.domain == "example.dev" and cfg.request_timeout == 5
    assert cfg.get_sandbox_url("sid") == "https://49983-sid.example.dev"
    assert ConnectionConfig(sandbox_url="http://proxy").get_sandbox_url("sid") == "http://proxy"
    monkeypatch.delenv("E2B_DOMAIN")
    # only what was given: the client's defaults (the local engine) stay
    assert ConnectionConfig(request_timeout=7).get_api_params() == {"request_timeout": 7}


def test_killed_during_run_code_is_e2b_timeout(engine):
    s = Sandbox.create(timeout=120)
    started = threading.Event()
    timer = threading.Thread(target=lambda: (started.wait(60), s.kill()))
    timer.start()
    try:
        # killed once the cell is running (its output arrived), not at a guessed time
        with pytest.raises(TimeoutException, match="sandbox was killed while the request was in progress"):
            s.run_code("print('go', flush=True); import time; time.sleep(300)", timeout=300,
                       on_stdout=lambda m: started.set())
    finally:
        started.set()
        timer.join()
