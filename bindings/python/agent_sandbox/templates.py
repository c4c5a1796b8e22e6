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
from typing import Any, List, Optional, Union

from . import _native as N
from . import lowlevel as ll
from .exceptions import NotFoundException
from .models import TemplateInfo

__all__ = ["build", "get", "list_all", "delete", "build_sync", "get_sync", "list_all_sync",
           "delete_sync"]


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


build.__doc__ = build_sync.__doc__
get.__doc__ = get_sync.__doc__
list_all.__doc__ = list_all_sync.__doc__
delete.__doc__ = delete_sync.__doc__
