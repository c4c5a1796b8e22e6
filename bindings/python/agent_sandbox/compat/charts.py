"""``e2b_code_interpreter.charts``: the typed charts of a run's results.

A matplotlib figure shown by the code comes back as a result with ``png``
and ``chart``; under :mod:`agent_sandbox.compat` ``chart`` is one of these
classes (under the native API it is the decoded JSON dict). The JSON shape
is documented in docs/code-interpreter.md ("Charts")::

    chart = sbx.run_code(code).results[0].chart
    if isinstance(chart, BarChart):
        for bar in chart.elements:
            print(bar.label, bar.group, bar.value)

``chart.to_dict()`` gives the JSON back.
"""

from __future__ import annotations

import enum
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = [
    "ChartType",
    "ScaleType",
    "Chart",
    "Chart2D",
    "PointData",
    "PointChart",
    "LineChart",
    "ScatterChart",
    "BarData",
    "BarChart",
    "PieData",
    "PieChart",
    "BoxAndWhiskerData",
    "BoxAndWhiskerChart",
    "SuperChart",
    "ChartTypes",
]


class ChartType(str, enum.Enum):
    """What a chart is (its JSON ``type``)."""

    LINE = "line"
    SCATTER = "scatter"
    BAR = "bar"
    PIE = "pie"
    BOX_AND_WHISKER = "box_and_whisker"
    SUPERCHART = "superchart"
    UNKNOWN = "unknown"


class ScaleType(str, enum.Enum):
    """An axis scale: matplotlib's scale name, or ``datetime``/``categorical``."""

    LINEAR = "linear"
    DATETIME = "datetime"
    CATEGORICAL = "categorical"
    LOG = "log"
    SYMLOG = "symlog"
    LOGIT = "logit"
    FUNCTION = "function"
    FUNCTIONLOG = "functionlog"
    ASINH = "asinh"
    UNKNOWN = "unknown"


def _scale(v: Any) -> ScaleType:
    try:
        return ScaleType(v)
    except ValueError:
        return ScaleType.UNKNOWN


class Chart:
    """A chart: ``type``, ``title`` (None without one), ``elements``."""

    type: ChartType
    title: Optional[str]
    elements: List[Any]

    def __init__(self, **kwargs: Any) -> None:
        self._raw = kwargs
        try:
            self.type = ChartType(kwargs.get("type") or ChartType.UNKNOWN)
        except ValueError:
            self.type = ChartType.UNKNOWN
        self.title = kwargs.get("title")
        self.elements = list(kwargs.get("elements") or [])

    def to_dict(self) -> Dict[str, Any]:
        """The chart's JSON, as the sandbox sent it."""
        return self._raw

    def __repr__(self) -> str:
        return f"{type(self).__name__}(title={self.title!r}, elements={len(self.elements)})"


class Chart2D(Chart):
    """A chart with axes: labels and the units found in them ("Time (s)" → "s")."""

    x_label: Optional[str]
    y_label: Optional[str]
    x_unit: Optional[str]
    y_unit: Optional[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_label = kwargs.get("x_label")
        self.y_label = kwargs.get("y_label")
        self.x_unit = kwargs.get("x_unit")
        self.y_unit = kwargs.get("y_unit")


class PointData:
    """One line or scatter series: ``label`` and ``points`` as (x, y) tuples
    (dates as ISO 8601 strings)."""

    label: str
    points: List[Tuple[Union[str, float], Union[str, float]]]

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")
        self.points = [(x, y) for x, y in kwargs.get("points") or []]

    def __repr__(self) -> str:
        return f"PointData(label={self.label!r}, points={len(self.points)})"


class PointChart(Chart2D):
    """Line and scatter charts: ticks, tick labels and scale of each axis."""

    x_ticks: List[Union[str, float]]
    x_tick_labels: List[str]
    x_scale: ScaleType
    y_ticks: List[Union[str, float]]
    y_tick_labels: List[str]
    y_scale: ScaleType
    elements: List[PointData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_ticks = list(kwargs.get("x_ticks") or [])
        self.x_tick_labels = list(kwargs.get("x_tick_labels") or [])
        self.x_scale = _scale(kwargs.get("x_scale"))
        self.y_ticks = list(kwargs.get("y_ticks") or [])
        self.y_tick_labels = list(kwargs.get("y_tick_labels") or [])
        self.y_scale = _scale(kwargs.get("y_scale"))
        self.elements = [PointData(**e) for e in self.elements]


class LineChart(PointChart):
    type = ChartType.LINE


class ScatterChart(PointChart):
    type = ChartType.SCATTER


class BarData:
    """One bar: its category ``label``, its series ``group`` and ``value``."""

    label: str
    group: str
    value: float

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")
        self.group = kwargs.get("group")
        self.value = kwargs.get("value")

    def __repr__(self) -> str:
        return f"BarData(label={self.label!r}, group={self.group!r}, value={self.value!r})"


class BarChart(Chart2D):
    type = ChartType.BAR
    elements: List[BarData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BarData(**e) for e in self.elements]


class PieData:
    """One wedge: ``label``, ``angle`` (degrees) and ``radius``."""

    label: str
    angle: float
    radius: float

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")
        self.angle = kwargs.get("angle")
        self.radius = kwargs.get("radius")

    def __repr__(self) -> str:
        return f"PieData(label={self.label!r}, angle={self.angle!r}, radius={self.radius!r})"


class PieChart(Chart):
    type = ChartType.PIE
    elements: List[PieData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [PieData(**e) for e in self.elements]


class BoxAndWhiskerData:
    """One box: ``label``, ``min``, ``first_quartile``, ``median``,
    ``third_quartile``, ``max`` (the whiskers' ends) and ``outliers``."""

    label: str
    min: float
    first_quartile: float
    median: float
    third_quartile: float
    max: float
    outliers: List[float]

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")
        self.min = kwargs.get("min")
        self.first_quartile = kwargs.get("first_quartile")
        self.median = kwargs.get("median")
        self.third_quartile = kwargs.get("third_quartile")
        self.max = kwargs.get("max")
        self.outliers = list(kwargs.get("outliers") or [])

    def __repr__(self) -> str:
        return (f"BoxAndWhiskerData(label={self.label!r}, min={self.min!r}, "
                f"median={self.median!r}, max={self.max!r})")


class BoxAndWhiskerChart(Chart2D):
    type = ChartType.BOX_AND_WHISKER
    elements: List[BoxAndWhiskerData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BoxAndWhiskerData(**e) for e in self.elements]


class SuperChart(Chart):
    """A figure of several axes: ``title`` is the figure's, ``elements`` its charts."""

    type = ChartType.SUPERCHART
    elements: List[Chart]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [c for c in (_deserialize_chart(e) for e in self.elements) if c]


ChartTypes = Union[LineChart, ScatterChart, BarChart, PieChart, BoxAndWhiskerChart, SuperChart]

_CLASSES = {
    "line": LineChart,
    "scatter": ScatterChart,
    "bar": BarChart,
    "pie": PieChart,
    "box_and_whisker": BoxAndWhiskerChart,
    "superchart": SuperChart,
}


def _deserialize_chart(data: Optional[Dict[str, Any]]) -> Optional[Chart]:
    """The typed chart of a result's ``chart`` JSON (None for none)."""
    if not isinstance(data, dict) or not data:
        return None
    return _CLASSES.get(data.get("type"), Chart)(**data)
