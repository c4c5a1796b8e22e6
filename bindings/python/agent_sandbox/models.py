"""The plain data the API returns: results, file entries, sandbox information.

Field names follow the E2B SDK's so that code written for one reads the
other; the compat layer re-exports these (or thin subclasses of them).
"""

from __future__ import annotations

import datetime as _dt
import json as _json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, Iterable, List, Optional

__all__ = [
    "CommandResult",
    "ProcessInfo",
    "PtySize",
    "FileType",
    "EntryInfo",
    "WriteInfo",
    "FilesystemEventType",
    "FilesystemEvent",
    "SandboxState",
    "SandboxInfo",
    "SandboxSwapInfo",
    "SandboxMetrics",
    "Result",
    "Logs",
    "ExecutionError",
    "Execution",
    "OutputMessage",
    "Context",
    "CommandArg",
    "CommandInfo",
    "SessionInfo",
    "TemplateInfo",
    "GitFileStatus",
    "GitStatus",
    "GitBranches",
]


def _utc(seconds: int, nanos: int = 0) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc) + _dt.timedelta(
        microseconds=nanos // 1000
    )


# ---- commands -----------------------------------------------------------------


@dataclass
class CommandResult:
    """The outcome of a finished command."""

    stderr: str
    """Everything the command wrote to stderr."""
    stdout: str
    """Everything the command wrote to stdout."""
    exit_code: int
    """The exit code: 0 on success, -1 when killed by a signal."""
    error: Optional[str] = None
    """The sandbox's description of an abnormal end (e.g. ``signal: killed``), or None."""

    @property
    def success(self) -> bool:
        """True when the command exited with code 0."""
        return self.exit_code == 0


@dataclass
class ProcessInfo:
    """A command or pty running in the sandbox."""

    pid: int
    tag: Optional[str]
    cmd: str
    args: List[str]
    envs: Dict[str, str]
    cwd: Optional[str]


@dataclass
class PtySize:
    """A terminal size."""

    rows: int = 24
    cols: int = 80


# ---- files ----------------------------------------------------------------------


class FileType(Enum):
    """The type of a filesystem entry."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"


_FILE_TYPES = {1: FileType.FILE, 2: FileType.DIR, 3: FileType.SYMLINK}


@dataclass
class WriteInfo:
    """What a write created: name, type and path."""

    name: str
    type: Optional[FileType]
    path: str
    metadata: Optional[Dict[str, str]] = None
    """User metadata of the file (E2B's ``user.e2b.*`` attributes, set by
    ``files.write(..., metadata=...)``); None when it has none."""


@dataclass
class EntryInfo(WriteInfo):
    """Information about a file, directory or symlink."""

    size: int = 0
    mode: int = 0
    permissions: str = ""
    owner: str = ""
    group: str = ""
    modified_time: Optional[_dt.datetime] = None
    symlink_target: Optional[str] = None

    @classmethod
    def _from_tuple(cls, t: tuple) -> "EntryInfo":
        name, path, ftype, size, mode, perms, owner, group, secs, nanos, target, meta = t
        return cls(
            name=name or "",
            type=_FILE_TYPES.get(ftype),
            path=path or "",
            size=size,
            mode=mode,
            permissions=perms or "",
            owner=owner or "",
            group=group or "",
            modified_time=_utc(secs, nanos),
            symlink_target=target,
            metadata=meta,
        )


class FilesystemEventType(Enum):
    """What happened to a watched entry."""

    CREATE = "create"
    WRITE = "write"
    REMOVE = "remove"
    RENAME = "rename"
    CHMOD = "chmod"


_EVENT_TYPES = {
    1: FilesystemEventType.CREATE,
    2: FilesystemEventType.WRITE,
    3: FilesystemEventType.REMOVE,
    4: FilesystemEventType.RENAME,
    5: FilesystemEventType.CHMOD,
}


@dataclass
class FilesystemEvent:
    """A change in a watched directory; ``name`` is relative to it."""

    name: str
    type: FilesystemEventType
    entry: Optional[EntryInfo] = None


# ---- sandboxes -------------------------------------------------------------------


class SandboxState(str, Enum):
    """A sandbox's state."""

    RUNNING = "running"
    PAUSED = "paused"


@dataclass
class SandboxSwapInfo:
    """Under the engine's ``--pause-swap``, where the RAM of a sandbox paused
    with memory went (docs/lifecycle.md; the local engine's ``swap`` object,
    E2B's cloud has none)."""

    swapped_bytes: int
    """Its bytes in the engine's swap file now."""
    resident_bytes: int
    """Its bytes still in RAM now."""
    resident_before_bytes: Optional[int]
    """Its bytes in RAM just before the pause; None when the engine does not
    know it (it adopted the paused sandbox from an engine before it)."""


@dataclass
class SandboxInfo:
    """What the control plane knows about a sandbox."""

    sandbox_id: str
    template_id: str
    name: Optional[str]
    metadata: Dict[str, str]
    started_at: _dt.datetime
    end_at: _dt.datetime
    state: SandboxState
    cpu_count: int
    memory_mb: int
    envd_version: Optional[str]
    disk_mb: int = 0
    sandbox_domain: Optional[str] = None
    allow_internet_access: Optional[bool] = None
    """As the engine reports it; None when it does not say."""
    network: Optional[Dict[str, Any]] = None
    """The effective network config with E2B's Python names (``allow_out``,
    ``deny_out``, ``rules``, ``egress_proxy`` without its password,
    ``allow_public_traffic``, ``mask_request_host``), or None."""
    pause_mode: Optional[str] = None
    """A paused sandbox's ``"memory"`` or ``"filesystem"`` (docs/lifecycle.md), else None."""
    fork_mode: Optional[str] = None
    """A fork's ``"processes"`` (it kept its parent's running processes and
    memory) or ``"files"`` (booted fresh on the parent's files), else None
    (docs/snapshots.md)."""
    auto_resume: Optional[bool] = None
    """E2B's ``lifecycle.autoResume``; None when the engine does not say (lists)."""
    lifecycle: Optional[Dict[str, Any]] = None
    """E2B's ``SandboxInfo.lifecycle``: ``{"on_timeout": "kill" | "pause",
    "auto_resume": bool}``, or None when the engine does not say (lists)."""
    volume_mounts: List[Dict[str, str]] = field(default_factory=list)
    """E2B's ``SandboxInfo.volume_mounts``: ``[{"name": volume, "path":
    mount path}]`` in the order of the create (lists carry them too)."""
    swap: Optional[SandboxSwapInfo] = None
    """Ours: under the engine's ``--pause-swap``, a sandbox paused with memory's
    swap figures (``get_info`` only); None when running, paused without memory,
    without the option, in lists and on E2B's cloud."""

    @classmethod
    def _from_dict(cls, d: Dict[str, Any], domain: Optional[str] = None) -> "SandboxInfo":
        from ._netconf import from_json
        iae = d.get("allow_internet_access", -1)
        state = d.get("state") or "running"
        try:
            st = SandboxState(state)
        except ValueError:  # an engine with more states than we know
            st = state  # type: ignore[assignment]
        return cls(
            sandbox_id=d["sandbox_id"],
            template_id=d.get("template_id") or "",
            name=d.get("name"),
            metadata=dict(d.get("metadata") or {}),
            started_at=_utc(d.get("started_at") or 0),
            end_at=_utc(d.get("end_at") or 0),
            state=st,
            cpu_count=d.get("cpu_count") or 0,
            memory_mb=d.get("memory_mb") or 0,
            envd_version=d.get("envd_version"),
            disk_mb=d.get("disk_mb") or 0,
            sandbox_domain=domain,
            allow_internet_access=None if iae is None or iae < 0 else bool(iae),
            network=from_json(d.get("network")),
            pause_mode=d.get("pause_mode"),
            fork_mode=d.get("fork_mode"),
            auto_resume=None if d.get("auto_resume", -1) < 0 else bool(d.get("auto_resume")),
            lifecycle=None if not d.get("on_timeout") else {
                "on_timeout": d["on_timeout"],
                "auto_resume": d.get("auto_resume", -1) == 1},
            volume_mounts=[dict(m) for m in d.get("volume_mounts") or []],
            swap=None if d.get("swapped_bytes", -1) < 0 else SandboxSwapInfo(
                swapped_bytes=d["swapped_bytes"],
                resident_bytes=d.get("resident_bytes", -1),
                resident_before_bytes=None if d.get("resident_before_bytes", -1) < 0
                else d["resident_before_bytes"]),
        )


@dataclass
class SandboxMetrics:
    """One resource-usage sample of a sandbox."""

    timestamp: _dt.datetime
    cpu_used_pct: float
    cpu_count: int
    mem_used: int
    mem_total: int
    disk_used: int
    disk_total: int
    mem_cache: int = 0
    """Page cache in bytes (not reported by this library: 0)."""

    @classmethod
    def _from_tuple(cls, t: tuple) -> "SandboxMetrics":
        ts, cpu_pct, cpus, mem_used, mem_total, disk_used, disk_total = t
        return cls(_utc(ts), cpu_pct, cpus, mem_used, mem_total, disk_used, disk_total)


# ---- code interpreter -----------------------------------------------------------------

_STANDARD_FORMATS = (
    "text",
    "html",
    "markdown",
    "svg",
    "png",
    "jpeg",
    "pdf",
    "latex",
    "json",
    "javascript",
    "data",
    "chart",
)


class Result:
    """One rich result of a run (a Jupyter MIME bundle).

    ``text``, ``html``, ``markdown``, ``svg``, ``png``/``jpeg``/``pdf``
    (base64), ``latex``, ``javascript`` are strings; ``json``, ``data`` and
    ``chart`` are decoded JSON; other MIME types are in ``extra``.
    """

    def __init__(
        self,
        text: Optional[str] = None,
        html: Optional[str] = None,
        markdown: Optional[str] = None,
        svg: Optional[str] = None,
        png: Optional[str] = None,
        jpeg: Optional[str] = None,
        pdf: Optional[str] = None,
        latex: Optional[str] = None,
        json: Optional[Any] = None,
        javascript: Optional[str] = None,
        data: Optional[Any] = None,
        chart: Optional[Any] = None,
        is_main_result: bool = False,
        extra: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> None:
        self.text = text
        self.html = html
        self.markdown = markdown
        self.svg = svg
        self.png = png
        self.jpeg = jpeg
        self.pdf = pdf
        self.latex = latex
        self.json = json
        self.javascript = javascript
        self.data = data
        self.chart = chart
        self.is_main_result = is_main_result
        self.extra = extra

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "Result":
        kw: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for key, value in d.items():
            if key == "is_main":
                kw["is_main_result"] = bool(value)
            elif key in ("json", "data", "chart"):
                try:
                    kw[key] = _json.loads(value) if isinstance(value, str) else value
                except ValueError:
                    kw[key] = value
            elif key in _STANDARD_FORMATS:
                kw[key] = value
            else:
                extra[key] = value
        if extra:
            kw["extra"] = extra
        return cls(**kw)

    def __getitem__(self, item: str) -> Any:
        return getattr(self, item)

    def formats(self) -> Iterable[str]:
        """The formats this result has."""
        out = [f for f in _STANDARD_FORMATS if getattr(self, f)]
        if self.extra:
            out.extend(self.extra)
        return out

    def __repr__(self) -> str:
        if self.text:
            return f"Result({self.text})"
        return "Result(Formats: " + ", ".join(self.formats()) + ")"

    __str__ = __repr__

    def _repr_html_(self) -> Optional[str]:
        return self.html

    def _repr_markdown_(self) -> Optional[str]:
        return self.markdown

    def _repr_svg_(self) -> Optional[str]:
        return self.svg

    def _repr_png_(self) -> Optional[str]:
        return self.png

    def _repr_jpeg_(self) -> Optional[str]:
        return self.jpeg

    def _repr_latex_(self) -> Optional[str]:
        return self.latex


@dataclass(repr=False)
class Logs:
    """What a run printed: stdout and stderr as the chunks the kernel sent."""

    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Logs(stdout: {self.stdout}, stderr: {self.stderr})"

    def to_json(self) -> str:
        return _json.dumps({"stdout": self.stdout, "stderr": self.stderr})


@dataclass
class ExecutionError:
    """The exception the code raised: name, value and formatted traceback."""

    name: str
    value: str
    traceback: str

    def to_json(self) -> str:
        return _json.dumps({"name": self.name, "value": self.value, "traceback": self.traceback})


@dataclass
class OutputMessage:
    """A chunk of a run's stdout or stderr, as passed to its callbacks."""

    line: str
    timestamp: int
    """Unix epoch in nanoseconds (when the client received it)."""
    error: bool = False

    def __str__(self) -> str:
        return self.line


@dataclass(repr=False)
class Execution:
    """The outcome of ``run_code``: results, logs, error and execution count."""

    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None

    @property
    def main_result(self) -> Optional[Result]:
        """The cell's value (Jupyter's execute_result), if any."""
        for r in self.results:
            if r.is_main_result:
                return r
        return None

    @property
    def text(self) -> Optional[str]:
        """The main result's text; when there is none, what the code printed.

        ``run_code("2 ** 10").text`` and ``run_code("print(2 ** 10)").text``
        are both ``"1024"`` (one trailing newline of printed output is
        dropped). ``None`` when the code neither had a value nor printed.
        """
        main = self.main_result
        if main is not None and main.text is not None:
            return main.text
        if self.logs.stdout:
            printed = "".join(self.logs.stdout)
            return printed[:-1] if printed.endswith("\n") else printed
        return None

    def __repr__(self) -> str:
        return f"Execution(Results: {self.results}, Logs: {self.logs}, Error: {self.error})"

    def to_json(self) -> str:
        results = []
        for r in self.results:
            d = {f: r[f] for f in r.formats() if f not in (r.extra or {})}
            d["text"] = r.text
            results.append(d)
        return _json.dumps(
            {
                "results": results,
                "logs": self.logs.to_json(),
                "error": self.error.to_json() if self.error else None,
            }
        )

    @classmethod
    def _from_tuple(cls, t: tuple) -> "Execution":
        results, out, err, error, count = t
        return cls(
            results=[Result._from_dict(d) for d in results],
            logs=Logs(stdout=list(out), stderr=list(err)),
            error=ExecutionError(*error) if error else None,
            execution_count=count if count >= 0 else None,
        )


@dataclass
class Context:
    """A code context: a live kernel whose state persists across runs."""

    id: str
    language: str
    cwd: str


# ---- named commands ---------------------------------------------------------------------


@dataclass
class CommandArg:
    """An argument of a named command."""

    name: str
    type: str
    """``string``, ``integer``, ``float``, ``boolean`` or ``json``."""
    required: bool
    default: Optional[str] = None
    """The default as text, or None."""
    description: str = ""


@dataclass
class CommandInfo:
    """A command a sandbox serves (``sandbox.list_commands()``)."""

    name: str
    description: str
    args: List[CommandArg] = field(default_factory=list)


# ---- sessions and templates ------------------------------------------------------------


@dataclass
class SessionInfo:
    """A saved session: a sandbox remembered under a name."""

    name: str
    sandbox_id: str
    template: str
    api_url: str
    created_at: _dt.datetime
    metadata: Dict[str, str] = field(default_factory=dict)


@dataclass
class TemplateInfo:
    """A template the engine knows."""

    template_id: str
    name: str
    build_id: str = ""
    description: str = ""
    cpu_count: int = 0
    memory_mb: int = 0
    disk_mb: int = 0
    created_at: Optional[_dt.datetime] = None
    cached: Optional[bool] = None
    """After a build: whether an earlier build was reused."""
    build_log: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict)


# ---- git (sandbox.git) ----------------------------------------------------------


@dataclass
class GitFileStatus:
    """One changed file of :meth:`Git.status <agent_sandbox.git.Git.status>`."""

    name: str
    """Its path from the repository's root."""
    status: str
    """``modified``, ``added``, ``deleted``, ``renamed``, ``copied``,
    ``typechange``, ``untracked``, ``conflict`` or ``unknown``."""
    index_status: str
    """The index's letter (porcelain v1's: ``M``, ``A``, ``?``, ``" "``...)."""
    working_tree_status: str
    staged: bool
    renamed_from: Optional[str] = None


@dataclass
class GitStatus:
    """A work tree's state (``git status``)."""

    current_branch: Optional[str]
    upstream: Optional[str]
    ahead: int
    behind: int
    detached: bool
    file_status: List[GitFileStatus]

    @property
    def is_clean(self) -> bool:
        return not self.file_status

    @property
    def has_changes(self) -> bool:
        return bool(self.file_status)

    @property
    def has_staged(self) -> bool:
        return any(f.staged for f in self.file_status)

    @property
    def has_untracked(self) -> bool:
        return any(f.status == "untracked" for f in self.file_status)

    @property
    def has_conflicts(self) -> bool:
        return any(f.status == "conflict" for f in self.file_status)

    @property
    def total_count(self) -> int:
        return len(self.file_status)

    @property
    def staged_count(self) -> int:
        return sum(1 for f in self.file_status if f.staged)

    @property
    def unstaged_count(self) -> int:
        return sum(1 for f in self.file_status if not f.staged)

    @property
    def untracked_count(self) -> int:
        return sum(1 for f in self.file_status if f.status == "untracked")

    @property
    def conflict_count(self) -> int:
        return sum(1 for f in self.file_status if f.status == "conflict")


@dataclass
class GitBranches:
    """The local branches and the checked-out one (None when detached)."""

    branches: List[str]
    current_branch: Optional[str]
