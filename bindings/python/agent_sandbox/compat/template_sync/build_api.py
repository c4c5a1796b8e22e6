"""``e2b.template_sync.build_api``: the builder's calls, each on the C
library (asb_templates_*; agent_sandbox.templates). ``api_client`` is the
connection options compat resolves from E2B's ``ApiParams``.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence

from ... import templates as _T
from ...exceptions import (AgentSandboxError, BuildException, FileUploadException,
                           NotFoundException, TemplateException)
from ..template.consts import FILE_UPLOAD_TIMEOUT_SECONDS
from ..template.logger import LogEntry
from ..template.types import (BuildStatusReason, TemplateBuildStatus,
                              TemplateBuildStatusResponse, TemplateTag, TemplateTagInfo)
from ..template.utils import get_build_step_index

__all__ = ["get_build_status", "check_alias_exists", "assign_tags", "remove_tags",
           "get_template_tags", "request_build", "get_file_upload_link", "upload_file",
           "trigger_build", "wait_for_build_finish", "FileUploadLink"]


@dataclass
class FileUploadLink:
    """E2B's answer to ``get_file_upload_link``: whether the engine has the
    files, and where to upload them."""

    present: bool
    url: Optional[str] = None


def _entry(line: Any) -> LogEntry:
    return LogEntry(timestamp=line.timestamp or _dt.datetime.now(_dt.timezone.utc),
                    level=line.level if line.level in ("debug", "info", "warn", "error")
                    else "info", message=line.message)


def _step_traceback(step: Optional[str],
                    stack_traces: Sequence[Optional[TracebackType]]) -> Optional[TracebackType]:
    """The call site of E2B's step ``step`` (``reason.step``: "base", a
    number, "finalize"), None if unknown."""
    if step is None or not stack_traces:
        return None
    i = get_build_step_index(step, len(stack_traces))
    return stack_traces[i] if 0 <= i < len(stack_traces) else None


def _as_e2b_error(e: BaseException) -> BaseException:
    """The library's failure of a step (request, trigger) as E2B raises it:
    BuildException for a refused request, FileUploadException for uploads;
    other errors as they are."""
    msg = str(e)
    if isinstance(e, AgentSandboxError) and "template upload" in msg:
        return FileUploadException(msg)
    if isinstance(e, BuildException) or getattr(e, "status", "") == "ASB_EINVAL":
        return BuildException(msg)
    return e


def _raise_as(e: BaseException, kind: type, stack_trace: Optional[TracebackType]) -> NoReturn:
    """The library's error as E2B's ``kind`` of exception, its traceback
    the step's call site (E2B's ``.with_traceback(stack_trace)``)."""
    err = kind(str(e))
    raise (err.with_traceback(stack_trace) if stack_trace is not None else err) from None


def request_build(client: Dict[str, Any], name: str, tags: Optional[List[str]], cpu_count: int,
                  memory_mb: int) -> Any:
    """Ask for a build of ``name`` (asb_templates_request_build): its
    ``template_id``, ``build_id`` and ``tags``."""
    try:
        return _T.request_build_sync(name, tags=tags, cpu_count=cpu_count, memory_mb=memory_mb,
                                     **client)
    except BaseException as e:
        err = _as_e2b_error(e)
        if err is e:
            raise
        raise err from None


def files_hash(template: Any, step: Dict[str, Any], stack_trace: Optional[TracebackType]) -> str:
    """A COPY step's ``filesHash`` (asb_templates_files_hash: the hash of the
    tar the library packs of it, from the template's file context, less its
    ignore patterns and the context's .dockerignore)."""
    args = step.get("args", [])
    try:
        return _T.files_hash(args[0], context_dir=template._file_context_path,
                             ignore_patterns=template._file_ignore_patterns,
                             resolve_symlinks=len(args) > 4 and args[4] == "true")
    except AgentSandboxError as e:
        _raise_as(e, BuildException, stack_trace)


def get_file_upload_link(client: Dict[str, Any], template_id: str, files_hash: str,
                         stack_trace: Optional[TracebackType] = None) -> FileUploadLink:
    """Whether the engine has the files of ``files_hash`` and where to upload
    them (asb_templates_files_link)."""
    try:
        present, url = _T.files_link_sync(template_id, files_hash, **client)
    except AgentSandboxError as e:
        _raise_as(e, FileUploadException, stack_trace)
    return FileUploadLink(present=present, url=url)


def upload_file(api_client: Dict[str, Any], file_name: str, context_path: str, url: str,
                ignore_patterns: List[str], resolve_symlinks: bool, gzip: bool,
                stack_trace: Optional[TracebackType], request_timeout: Optional[float] = None,
                ) -> None:
    """Pack what ``file_name`` (a path or glob under ``context_path``)
    matches, less ``ignore_patterns`` and the context's .dockerignore, and
    PUT it to ``url`` (asb_templates_files_upload; ``gzip`` is accepted for
    E2B's signature: the library sends a plain tar)."""
    conn = dict(api_client) if isinstance(api_client, dict) else {}
    conn.pop("request_timeout", None)  # the upload's own bound, below
    try:
        _T.files_upload_sync(url, file_name, context_dir=context_path,
                             ignore_patterns=ignore_patterns, resolve_symlinks=resolve_symlinks,
                             request_timeout=(FILE_UPLOAD_TIMEOUT_SECONDS
                                              if request_timeout is None else request_timeout),
                             **conn)
    except AgentSandboxError as e:
        _raise_as(e, FileUploadException, stack_trace)


def trigger_build(client: Dict[str, Any], template_id: str, build_id: str,
                  template: Dict[str, Any]) -> None:
    """Start the build with E2B's TemplateBuildStartV2 ``template``
    (asb_templates_trigger_build)."""
    try:
        _T.trigger_build_sync(template_id, build_id, template, **client)
    except BaseException as e:
        err = _as_e2b_error(e)
        if err is e:
            raise
        raise err from None


def build_failed(st: Any, template_id: str, build_id: str,
                 stack_traces: Sequence[Optional[TracebackType]]) -> BaseException:
    """E2B's BuildException of a failed status ``st``: its traceback the
    call site of the step ``reason.step`` names; ``.state`` (ours) the
    build's state, as agent_sandbox.templates gives it."""
    reason = st.reason
    step = None if reason is None or reason.step is None else str(reason.step)
    tb = _step_traceback(step, stack_traces)
    msg = reason.message if reason is not None else "Build failed"
    err = BuildException(msg)
    err.state = _T.BuildState(  # type: ignore[attr-defined]
        template_id=template_id, build_id=build_id, status="error", error=msg,
        error_step=int(step) if step is not None and step.isdigit() else None)
    return err.with_traceback(tb) if tb is not None else err


def wait_for_build_finish(client: Dict[str, Any], template_id: str, build_id: str,
                          on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                          logs_refresh_frequency: float = 0.2,
                          stack_traces: Sequence[Optional[TracebackType]] = ()) -> None:
    """Follow the build's status (and its log, 100 lines a call) until it is
    ready; :class:`BuildException` with the failed step's call site as its
    traceback when it fails."""
    offset = 0

    def poll() -> Any:
        nonlocal offset
        st = get_build_status(client, template_id, build_id, offset)
        offset += len(st.log_entries)
        for entry in st.log_entries:
            if on_build_logs:
                on_build_logs(entry)
        return st

    while True:
        st = poll()
        if st.status in (TemplateBuildStatus.READY, TemplateBuildStatus.ERROR):
            tail = st
            while tail.log_entries:  # the rest of its log
                tail = poll()
            if st.status == TemplateBuildStatus.READY:
                return
            raise build_failed(st, template_id, build_id, stack_traces)
        time.sleep(logs_refresh_frequency)


def build_spec(spec: Dict[str, Any], hashes: Dict[int, str]) -> Dict[str, Any]:
    """``spec`` as TemplateBuildStartV2: each COPY step with its filesHash,
    without the library's fifth argument and forceUpload (as
    asb_templates_build_steps sends it)."""
    for i, h in hashes.items():
        st = spec["steps"][i]
        del st["args"][4:]
        st.pop("forceUpload", None)
        st["filesHash"] = h
    return spec


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
