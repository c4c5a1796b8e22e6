"""Templates: build one from a directory holding a ``template.yaml``, list,
inspect and delete them (the C core's ``asb_templates_*``; the file format
is in docs/templates.md).

A build packs the directory, sends it to the engine's build endpoint and
returns once the template is ready; builds are cached by the hash of their
inputs. Every function is async with a ``*_sync`` twin and takes the usual
connection options (``api_key``, ``api_url``, ...)::

    info = await templates.build("examples/templates/c-hello")
    sandbox = await Sandbox.create(info.name)
    for t in await templates.list_all(): ...
    await templates.delete("c-hello")

E2B's Template builder (what ``agent_sandbox.compat.Template`` calls):
:func:`build_steps` builds from the steps JSON E2B's SDKs send
(``{"fromTemplate": "base", "steps": [{"type": "RUN", "args": [...]}, ...]}``),
uploading each COPY step's files from a local context directory;
:func:`build_status`, :func:`alias_exists` and the tag calls go with it::

    state = await templates.build_steps("my-app:v1", {"fromTemplate": "base",
        "steps": [{"type": "COPY", "args": ["app", "/opt/app", "", ""]},
                  {"type": "RUN", "args": ["ls /opt/app"]}]},
        context_dir=".", on_log=lambda line: print(line.message))

Errors: :class:`InvalidArgumentException` for a missing or invalid
``template.yaml`` (the message is ``template.yaml:<line>:<col>: <field>:
<why>``) or a built-in template given to :func:`delete`,
:class:`BuildException` when a step fails (the message names the step and
ends with its output), :class:`NotFoundException` for an unknown template,
:class:`SandboxException` while sandboxes still use one being deleted.
"""

from __future__ import annotations

import datetime as _dt
import json as _json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _native as N
from . import lowlevel as ll
from .exceptions import NotFoundException
from .models import TemplateInfo

__all__ = ["build", "get", "list_all", "delete", "build_sync", "get_sync", "list_all_sync",
           "delete_sync", "build_steps", "build_steps_sync", "build_status", "build_status_sync",
           "alias_exists", "alias_exists_sync", "assign_tags", "assign_tags_sync", "remove_tags",
           "remove_tags_sync", "get_tags", "get_tags_sync", "request_build", "request_build_sync",
           "files_hash", "files_link", "files_link_sync", "files_upload", "files_upload_sync",
           "trigger_build", "trigger_build_sync", "BuildLine", "BuildState", "RequestedBuild"]


def _info(t: Any) -> TemplateInfo:
    created = ll.asb_template_created_at(t)
    cached = ll.asb_template_cached(t)
    try:
        raw = _json.loads(ll.asb_template_json(t) or "{}")
    except ValueError:
        raw = {}
    return TemplateInfo(
        template_id=ll.asb_template_id(t) or "",
        name=ll.asb_template_name(t) or "",
        build_id=ll.asb_template_build_id(t) or "",
        description=ll.asb_template_description(t) or "",
        cpu_count=ll.asb_template_cpu_count(t),
        memory_mb=ll.asb_template_memory_mb(t),
        disk_mb=ll.asb_template_disk_mb(t),
        created_at=_dt.datetime.fromtimestamp(created, tz=_dt.timezone.utc) if created else None,
        cached=None if cached < 0 else bool(cached),
        build_log=ll.asb_template_build_log(t),
        raw=raw if isinstance(raw, dict) else {},
    )


def _call(request_timeout: Optional[float]) -> Any:
    o = ll.asb_call_options()
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    o.cancel = N.current_cancel()
    return o


def build_sync(path: Union[str, "os.PathLike[str]"], *, force: bool = False,
               timeout: Optional[float] = None, **conn: Any) -> TemplateInfo:
    """Build the template of directory ``path`` (its ``template.yaml`` and
    the files its steps copy; at most 64 MiB) and return it once ready.
    ``force`` rebuilds even when a build of the same inputs exists
    (``info.cached`` says whether one was reused); ``timeout`` bounds the
    whole build (seconds; default 30 min, 0 = none)."""
    o = ll.asb_template_build_options()
    o.force = 1 if force else 0
    o.timeout_ms = N.ms(timeout)
    o.cancel = N.current_cancel()
    return _info(N.call(ll.asb_templates_build, N.client(**conn), os.fspath(path), o))


def get_sync(template: str, *, request_timeout: Optional[float] = None,
             **conn: Any) -> TemplateInfo:
    """A template by id or name; :class:`NotFoundException` if none."""
    return _info(N.call(ll.asb_templates_get, N.client(**conn), template,
                        _call(request_timeout), not_found=NotFoundException))


def list_all_sync(*, request_timeout: Optional[float] = None, **conn: Any) -> List[TemplateInfo]:
    """Every template the engine has (the built-in ones too)."""
    lst = N.call(ll.asb_templates_list, N.client(**conn), _call(request_timeout))
    return [_info(ll.asb_template_list_get(lst, i)) for i in range(ll.asb_template_list_count(lst))]


def delete_sync(template: str, *, request_timeout: Optional[float] = None, **conn: Any) -> None:
    """Delete a template by id or name."""
    N.call(ll.asb_templates_delete, N.client(**conn), template, _call(request_timeout),
           not_found=NotFoundException)


async def build(path: Union[str, "os.PathLike[str]"], *, force: bool = False,
                timeout: Optional[float] = None, **conn: Any) -> TemplateInfo:
    return await N.run(build_sync, path, force=force, timeout=timeout, **conn)


async def get(template: str, *, request_timeout: Optional[float] = None,
              **conn: Any) -> TemplateInfo:
    return await N.run(get_sync, template, request_timeout=request_timeout, **conn)


async def list_all(*, request_timeout: Optional[float] = None, **conn: Any) -> List[TemplateInfo]:
    return await N.run(list_all_sync, request_timeout=request_timeout, **conn)


async def delete(template: str, *, request_timeout: Optional[float] = None, **conn: Any) -> None:
    await N.run(delete_sync, template, request_timeout=request_timeout, **conn)


# ---- E2B's Template builder --------------------------------------------------------


@dataclass
class BuildLine:
    """One line of a build's log."""

    timestamp: Optional[_dt.datetime]
    level: str
    message: str


@dataclass
class BuildState:
    """A builder build: its ids, state (``waiting``, ``building``, ``ready``,
    ``error``), a failed build's reason and E2B's step number (0 the base,
    i + 1 for ``steps[i]``), and the log lines this answer held."""

    template_id: str
    build_id: str
    status: str
    error: Optional[str] = None
    error_step: Optional[int] = None
    logs: List[BuildLine] = field(default_factory=list)


def _when(ms: int) -> Optional[_dt.datetime]:
    return _dt.datetime.fromtimestamp(ms / 1000.0, tz=_dt.timezone.utc) if ms else None


def _state(b: Any) -> BuildState:
    step = ll.asb_template_build_error_step(b)
    return BuildState(
        template_id=ll.asb_template_build_template_id(b) or "",
        build_id=ll.asb_template_build_build_id(b) or "",
        status=ll.asb_template_build_status(b) or "",
        error=ll.asb_template_build_error(b),
        error_step=None if step < 0 else step,
        logs=[BuildLine(_when(ll.asb_template_build_log_timestamp(b, i)),
                        ll.asb_template_build_log_level(b, i) or "info",
                        ll.asb_template_build_log_message(b, i) or "")
              for i in range(ll.asb_template_build_log_count(b))],
    )


def build_steps_sync(name: str, build: Union[str, Dict[str, Any]], *,
                     context_dir: Union[None, str, "os.PathLike[str]"] = None,
                     tags: Optional[Sequence[str]] = None,
                     ignore_patterns: Optional[Sequence[str]] = None, cpu_count: int = 0,
                     memory_mb: int = 0, skip_cache: bool = False, background: bool = False,
                     on_log: Optional[Callable[[BuildLine], None]] = None,
                     timeout: Optional[float] = None, **conn: Any) -> BuildState:
    """Build template ``name`` (``"app"`` or ``"app:tag"``) from E2B's
    builder JSON ``build`` (a dict or its JSON text). COPY steps without a
    ``filesHash`` have their files packed from ``context_dir`` (default: the
    current directory) and uploaded unless the engine has them, less what
    ``ignore_patterns`` and then ``context_dir``'s ``.dockerignore`` leave
    out (Docker's rules: ``**``, ``!`` exceptions, a leading ``/``,
    comments; the last matching pattern decides). Returns once
    the build is ready (``background``: once started). ``on_log`` gets each
    :class:`BuildLine` as it arrives; an exception it raises stops following
    the build and is raised here. A failed build raises
    :class:`BuildException` with ``.state`` (a :class:`BuildState`: the
    failing step, the log)."""
    o = ll.asb_template_steps_options()
    if context_dir is not None:
        o.context_dir = os.fspath(context_dir)
    if tags:
        o.tags = list(tags)
    if ignore_patterns:
        o.ignore_patterns = [str(p) for p in ignore_patterns]
    o.cpu_count = int(cpu_count or 0)
    o.memory_mb = int(memory_mb or 0)
    o.skip_cache = 1 if skip_cache else 0
    o.background = 1 if background else 0
    o.timeout_ms = N.ms(timeout)
    o.cancel = N.current_cancel()
    cb = None
    if on_log is not None:
        def deliver(ts: int, level: Optional[str], message: Optional[str]) -> None:
            on_log(BuildLine(_when(ts), level or "info", message or ""))
        cb = ll.asbpy_callbacks(None, None, None, None, deliver, None, 0)
        o.bind(cb)
    text = build if isinstance(build, str) else _json.dumps(build)
    r = ll.asb_templates_build_steps(N.client(**conn), name, text, o)
    rc, b = (r[0], r[1]) if type(r) is list else (r, None)
    state = _state(b) if b is not None else None
    if rc < 0:
        try:
            N.fail(rc, cb)
        except BaseException as e:
            if state is not None:
                e.state = state  # type: ignore[attr-defined]
            raise
    assert state is not None
    return state


@dataclass
class RequestedBuild:
    """A build :func:`request_build` asked for (not started yet)."""

    template_id: str
    build_id: str
    tags: List[str] = field(default_factory=list)


def request_build_sync(name: str, *, tags: Optional[Sequence[str]] = None, cpu_count: int = 0,
                       memory_mb: int = 0, request_timeout: Optional[float] = None,
                       **conn: Any) -> RequestedBuild:
    """The first step of :func:`build_steps`: a build of template ``name``
    (``"app"`` or ``"app:tag"``), its template and build ids and tags."""
    o = ll.asb_template_request_options()
    if tags:
        o.tags = list(tags)
    o.cpu_count = int(cpu_count or 0)
    o.memory_mb = int(memory_mb or 0)
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    o.cancel = N.current_cancel()
    b = N.call(ll.asb_templates_request_build, N.client(**conn), name, o)
    return RequestedBuild(
        template_id=ll.asb_template_build_template_id(b) or "",
        build_id=ll.asb_template_build_build_id(b) or "",
        tags=[ll.asb_template_build_tag(b, i) or ""
              for i in range(ll.asb_template_build_tag_count(b))])


def _files_options(context_dir: Union[None, str, "os.PathLike[str]"],
                   ignore_patterns: Optional[Sequence[str]], resolve_symlinks: bool,
                   timeout: Optional[float] = None) -> Any:
    o = ll.asb_template_files_options()
    if context_dir is not None:
        o.context_dir = os.fspath(context_dir)
    if ignore_patterns:
        o.ignore_patterns = [str(p) for p in ignore_patterns]
    o.resolve_symlinks = 1 if resolve_symlinks else 0
    if timeout is not None:
        o.timeout_ms = N.ms(timeout)
    o.cancel = N.current_cancel()
    return o


def files_hash(src: str, *, context_dir: Union[None, str, "os.PathLike[str]"] = None,
               ignore_patterns: Optional[Sequence[str]] = None,
               resolve_symlinks: bool = False) -> str:
    """The ``filesHash`` of a COPY step of ``src`` (a path or glob relative to
    ``context_dir``): the SHA-256 of the tar :func:`build_steps` packs of it
    (less ``ignore_patterns`` and ``context_dir``'s ``.dockerignore``). Local."""
    return str(N.call(ll.asb_templates_files_hash, src,
                      _files_options(context_dir, ignore_patterns, resolve_symlinks)))


def files_link_sync(template_id: str, files_hash: str, *,
                    request_timeout: Optional[float] = None,
                    **conn: Any) -> Tuple[bool, Optional[str]]:
    """Whether the engine has the files of ``files_hash`` for the template,
    and the URL to upload them to (None if it gave none)."""
    present, url = N.call(ll.asb_templates_files_link, N.client(**conn), template_id,
                          files_hash, _call(request_timeout))
    return bool(present), url


def files_upload_sync(url: str, src: str, *,
                      context_dir: Union[None, str, "os.PathLike[str]"] = None,
                      ignore_patterns: Optional[Sequence[str]] = None,
                      resolve_symlinks: bool = False, request_timeout: Optional[float] = None,
                      **conn: Any) -> str:
    """Pack ``src``'s files as :func:`files_hash` does and upload them to
    ``url`` (from :func:`files_link_sync`); returns their hash."""
    return str(N.call(ll.asb_templates_files_upload, N.client(**conn), url, src,
                      _files_options(context_dir, ignore_patterns, resolve_symlinks,
                                     request_timeout)))


def trigger_build_sync(template_id: str, build_id: str, build: Union[str, Dict[str, Any]], *,
                       request_timeout: Optional[float] = None, **conn: Any) -> None:
    """Start a requested build with E2B's TemplateBuildStartV2 ``build`` (a
    dict or its JSON text; each COPY step with its ``filesHash``); follow
    it with :func:`build_status_sync`."""
    text = build if isinstance(build, str) else _json.dumps(build)
    N.call(ll.asb_templates_trigger_build, N.client(**conn), template_id, build_id, text,
           _call(request_timeout))


def build_status_sync(template_id: str, build_id: str, logs_offset: int = 0, *,
                      request_timeout: Optional[float] = None, **conn: Any) -> BuildState:
    """The state of a build and its log lines from ``logs_offset`` (at most
    100); :class:`NotFoundException` for an unknown build."""
    return _state(N.call(ll.asb_templates_build_status, N.client(**conn), template_id, build_id,
                         int(logs_offset), _call(request_timeout), not_found=NotFoundException))


def alias_exists_sync(alias: str, *, request_timeout: Optional[float] = None,
                      **conn: Any) -> bool:
    """Whether a template of that name exists."""
    return bool(N.call(ll.asb_templates_alias_exists, N.client(**conn), alias,
                       _call(request_timeout)))


def assign_tags_sync(target: str, tags: Sequence[str], *,
                     request_timeout: Optional[float] = None, **conn: Any) -> None:
    """Make ``tags`` name the build ``target`` (``"name:tag"`` or ``"name"``) names."""
    N.call(ll.asb_templates_tags_assign, N.client(**conn), target, list(tags),
           _call(request_timeout), not_found=NotFoundException)


def remove_tags_sync(name: str, tags: Sequence[str], *, request_timeout: Optional[float] = None,
                     **conn: Any) -> None:
    """Remove ``tags`` from template ``name``."""
    N.call(ll.asb_templates_tags_remove, N.client(**conn), name, list(tags),
           _call(request_timeout), not_found=NotFoundException)


def get_tags_sync(template_id: str, *, request_timeout: Optional[float] = None,
                  **conn: Any) -> List[Dict[str, Any]]:
    """The tags of a template: ``[{"tag", "buildID", "createdAt"}]``."""
    text = N.call(ll.asb_templates_tags_list, N.client(**conn), template_id,
                  _call(request_timeout), not_found=NotFoundException)
    return list(_json.loads(text or "[]"))


async def build_steps(name: str, build: Union[str, Dict[str, Any]], **kw: Any) -> BuildState:
    return await N.run(build_steps_sync, name, build, **kw)


async def request_build(name: str, **kw: Any) -> RequestedBuild:
    return await N.run(request_build_sync, name, **kw)


async def files_link(template_id: str, files_hash: str,
                     **kw: Any) -> Tuple[bool, Optional[str]]:
    return await N.run(files_link_sync, template_id, files_hash, **kw)


async def files_upload(url: str, src: str, **kw: Any) -> str:
    return await N.run(files_upload_sync, url, src, **kw)


async def trigger_build(template_id: str, build_id: str, build: Union[str, Dict[str, Any]],
                        **kw: Any) -> None:
    await N.run(trigger_build_sync, template_id, build_id, build, **kw)


async def build_status(template_id: str, build_id: str, logs_offset: int = 0,
                       **kw: Any) -> BuildState:
    return await N.run(build_status_sync, template_id, build_id, logs_offset, **kw)


async def alias_exists(alias: str, **kw: Any) -> bool:
    return await N.run(alias_exists_sync, alias, **kw)


async def assign_tags(target: str, tags: Sequence[str], **kw: Any) -> None:
    await N.run(assign_tags_sync, target, tags, **kw)


async def remove_tags(name: str, tags: Sequence[str], **kw: Any) -> None:
    await N.run(remove_tags_sync, name, tags, **kw)


async def get_tags(template_id: str, **kw: Any) -> List[Dict[str, Any]]:
    return await N.run(get_tags_sync, template_id, **kw)


for _a, _s in ((build_steps, build_steps_sync), (build_status, build_status_sync),
               (request_build, request_build_sync), (files_link, files_link_sync),
               (files_upload, files_upload_sync), (trigger_build, trigger_build_sync),
               (alias_exists, alias_exists_sync), (assign_tags, assign_tags_sync),
               (remove_tags, remove_tags_sync), (get_tags, get_tags_sync)):
    _a.__doc__ = _s.__doc__

build.__doc__ = build_sync.__doc__
get.__doc__ = get_sync.__doc__
list_all.__doc__ = list_all_sync.__doc__
delete.__doc__ = delete_sync.__doc__
