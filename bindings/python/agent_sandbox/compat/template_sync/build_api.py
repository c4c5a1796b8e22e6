"""``e2b.template_sync.build_api``: the builder's calls, each on the C
library (asb_templates_*; agent_sandbox.templates). ``api_client`` is the
connection options compat resolves from E2B's ``ApiParams``.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Dict, List, Optional

from ... import templates as _T
from ...exceptions import (AgentSandboxError, BuildException, FileUploadException,
                           NotFoundException, TemplateException)
from ..template.logger import LogEntry
from ..template.types import (BuildInfo, BuildStatusReason, TemplateBuildStatus,
                              TemplateBuildStatusResponse, TemplateTag, TemplateTagInfo)
from ..template.utils import get_build_step_index

__all__ = ["build", "get_build_status", "check_alias_exists", "assign_tags", "remove_tags",
           "get_template_tags"]


def _entry(line: Any) -> LogEntry:
    return LogEntry(timestamp=line.timestamp or _dt.datetime.now(_dt.timezone.utc),
                    level=line.level if line.level in ("debug", "info", "warn", "error")
                    else "info", message=line.message)


def _as_e2b_error(e: BaseException, stack_traces: List[Any]) -> BaseException:
    """The library's failure as E2B raises it: BuildException (pointing at
    the line of the step that failed), FileUploadException for uploads."""
    msg = str(e)
    state = getattr(e, "state", None)
    if isinstance(e, AgentSandboxError) and "template upload" in msg:
        out: BaseException = FileUploadException(msg)
    elif isinstance(e, BuildException) or getattr(e, "status", "") == "ASB_EINVAL":
        out = BuildException(msg)
    else:
        return e
    tb = None
    if state is not None and state.error_step is not None and stack_traces:
        i = get_build_step_index(str(state.error_step), len(stack_traces))
        if 0 <= i < len(stack_traces):
            tb = stack_traces[i]
    out.state = state  # type: ignore[attr-defined]
    return out.with_traceback(tb) if tb is not None else out


def build(api_client: Dict[str, Any], template: Any, name: str, *, tags: Optional[List[str]],
          cpu_count: int, memory_mb: int, skip_cache: bool,
          on_build_logs: Optional[Callable[[LogEntry], None]], background: bool) -> BuildInfo:
    """Build (or, ``background``, start building) ``template`` as ``name``."""
    t = template._template
    if skip_cache:
        t._force = True
    spec = t._serialize(for_build=True)
    deliver = (lambda line: on_build_logs(_entry(line))) if on_build_logs else None
    try:
        # E2B's order: file_ignore_patterns, then the context's .dockerignore
        # (which the C library reads itself)
        st = _T.build_steps_sync(name, spec, context_dir=t._file_context_path, tags=tags,
                                 ignore_patterns=t._file_ignore_patterns,
                                 cpu_count=cpu_count, memory_mb=memory_mb,
                                 skip_cache=bool(t._force), background=background,
                                 on_log=deliver, **api_client)
    except BaseException as e:
        err = _as_e2b_error(e, t._stack_traces)
        if err is e:
            raise
        raise err from None
    info = get_template_tags_safe(api_client, st.template_id)
    return BuildInfo(template_id=st.template_id, build_id=st.build_id, name=name, alias=name,
                     tags=[x.tag for x in info if x.build_id == st.build_id] or list(tags or []))


def get_template_tags_safe(api_client: Dict[str, Any], template_id: str) -> List[TemplateTag]:
    try:
        return get_template_tags(api_client, template_id)
    except AgentSandboxError:
        return []


def get_build_status(api_client: Dict[str, Any], template_id: str, build_id: str,
                     logs_offset: int = 0) -> TemplateBuildStatusResponse:
    """The state of a build and its log from ``logs_offset``."""
    try:
        st = _T.build_status_sync(template_id, build_id, logs_offset, **api_client)
    except NotFoundException as e:
        raise TemplateException(str(e)) from None
    entries = [_entry(x) for x in st.logs]
    reason = None
    if st.error is not None:
        reason = BuildStatusReason(message=st.error,
                                   step=None if st.error_step is None else str(st.error_step))
    return TemplateBuildStatusResponse(build_id=st.build_id, template_id=st.template_id,
                                       status=TemplateBuildStatus(st.status),
                                       log_entries=entries, logs=[x.message for x in entries],
                                       reason=reason)


def check_alias_exists(api_client: Dict[str, Any], alias: str) -> bool:
    """Whether a template of that name exists."""
    return _T.alias_exists_sync(alias, **api_client)


def assign_tags(api_client: Dict[str, Any], target_name: str,
                tags: List[str]) -> TemplateTagInfo:
    """Make ``tags`` name the build of ``target_name`` (``name:tag``)."""
    try:
        _T.assign_tags_sync(target_name, tags, **api_client)
    except NotFoundException as e:
        raise TemplateException(str(e)) from None
    name = target_name.split(":", 1)[0]
    tid = name
    try:
        tid = _T.get_sync(name, **api_client).template_id
    except AgentSandboxError:
        pass
    mine = [x for x in get_template_tags_safe(api_client, tid) if x.tag in tags]
    return TemplateTagInfo(build_id=mine[0].build_id if mine else "", tags=list(tags))


def remove_tags(api_client: Dict[str, Any], name: str, tags: List[str]) -> None:
    """Remove ``tags`` from template ``name``."""
    try:
        _T.remove_tags_sync(name, tags, **api_client)
    except NotFoundException as e:
        raise TemplateException(str(e)) from None


def _time(s: Any) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(str(s).replace("Z", "+00:00"))
    except ValueError:
        return _dt.datetime.fromtimestamp(0, tz=_dt.timezone.utc)


def get_template_tags(api_client: Dict[str, Any], template_id: str) -> List[TemplateTag]:
    """The tags of a template."""
    try:
        rows = _T.get_tags_sync(template_id, **api_client)
    except NotFoundException as e:
        raise TemplateException(str(e)) from None
    return [TemplateTag(tag=r.get("tag", ""), build_id=r.get("buildID", ""),
                        created_at=_time(r.get("createdAt"))) for r in rows]
