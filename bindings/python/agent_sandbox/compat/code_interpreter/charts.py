"""``e2b_code_interpreter.charts``: see :mod:`agent_sandbox.compat.charts`."""

from ..charts import *  # noqa: F401,F403
from ..charts import __all__  # noqa: F401
from ..charts import _deserialize_chart  # noqa: F401
