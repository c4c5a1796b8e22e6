"""An E2B code-interpreter program (only the imports changed, from
e2b_code_interpreter): a matplotlib chart comes back as typed data next to
its png, a pandas DataFrame as columns, a PIL image as a png.
SPDX-License-Identifier: Apache-2.0"""
from agent_sandbox.compat.code_interpreter import Sandbox
from agent_sandbox.compat.code_interpreter.charts import BarChart, ChartType

with Sandbox.create() as sbx:
    ex = sbx.run_code("""
import matplotlib.pyplot as plt
plt.bar(['apples', 'pears'], [3, 5], label='2024')
plt.title('Fruit'); plt.ylabel('Count (kg)')
plt.show()
""")
    result = ex.results[0]
    chart = result.chart
    assert isinstance(chart, BarChart) and chart.type == ChartType.BAR
    print("chart:", chart.title, chart.y_unit,
          [(b.label, b.group, b.value) for b in chart.elements], "png" if result.png else "")

    ex = sbx.run_code("import pandas as pd\npd.DataFrame({'n': [1, 2], 'sq': [1, 4]})")
    print("data:", ex.results[0].data)

    ex = sbx.run_code("from PIL import Image\nImage.new('RGB', (4, 4), 'red').show()")
    print("image:", len(ex.results), "png" if ex.results[0].png else "none")
