"""``e2b.template_async.build_api``: the builder's calls, awaited (each
runs the sync call of ``template_sync.build_api`` on a worker thread; a
cancelled task cancels the C call).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Sequence

from ... import _native as N
from ..template.logger import LogEntry
from ..template.types import TemplateBuildStatus, TemplateBuildStatusResponse
from ..template.types import TemplateTag, TemplateTagInfo
from ..template_sync import build_api as _S
from ..template_sync.build_api import FileUploadLink, build_failed, build_spec

__all__ = ["get_build_status", "check_alias_exists", "assign_tags", "remove_tags",
           "get_template_tags", "request_build", "get_file_upload_link", "upload_file",
           "trigger_build", "wait_for_build_finish", "FileUploadLink", "build_spec"]


async def request_build(client: Dict[str, Any], name: str, tags: Optional[List[str]],
                        cpu_count: int, memory_mb: int) -> Any:
    return await N.run(_S.request_build, client, name, tags, cpu_count, memory_mb)


async def files_hash(template: Any, step: Dict[str, Any],
                     stack_trace: Optional[TracebackType]) -> str:
    return await N.run(_S.files_hash, template, step, stack_trace)


async def get_file_upload_link(client: Dict[str, Any], template_id: str, files_hash: str,
                               stack_trace: Optional[TracebackType] = None) -> FileUploadLink:
    return await N.run(_S.get_file_upload_link, client, template_id, files_hash, stack_trace)


async def upload_file(api_client: Dict[str, Any], file_name: str, context_path: str, url: str,
                      ignore_patterns: List[str], resolve_symlinks: bool, gzip: bool,
                      stack_trace: Optional[TracebackType],
                      request_timeout: Optional[float] = None) -> None:
    await N.run(_S.upload_file, api_client, file_name, context_path, url, ignore_patterns,
                resolve_symlinks, gzip, stack_trace, request_timeout=request_timeout)


async def trigger_build(client: Dict[str, Any], template_id: str, build_id: str,
                        template: Dict[str, Any]) -> None:
    await N.run(_S.trigger_build, client, template_id, build_id, template)


async def wait_for_build_finish(client: Dict[str, Any], template_id: str, build_id: str,
                                on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                                logs_refresh_frequency: float = 0.2,
                                stack_traces: Sequence[Optional[TracebackType]] = ()) -> None:
    """See ``template_sync.build_api.wait_for_build_finish``."""
    offset = 0

    async def poll() -> Any:
        nonlocal offset
        st = await get_build_status(client, template_id, build_id, offset)
        offset += len(st.log_entries)
        for entry in st.log_entries:
            if on_build_logs:
                on_build_logs(entry)
        return st

    while True:
        st = await poll()
        if st.status in (TemplateBuildStatus.READY, TemplateBuildStatus.ERROR):
            tail = st
            while tail.log_entries:  # the rest of its log
                tail = await poll()
            if st.status == TemplateBuildStatus.READY:
                return
            raise build_failed(st, template_id, build_id, stack_traces)
        await asyncio.sleep(logs_refresh_frequency)


async def get_build_status(api_client: Dict[str, Any], template_id: str, build_id: str,
                           logs_offset: int = 0) -> TemplateBuildStatusResponse:
    return await N.run(_S.get_build_status, api_client, template_id, build_id, logs_offset)


async def check_alias_exists(api_client: Dict[str, Any], alias: str) -> bool:
    return await N.run(_S.check_alias_exists, api_client, alias)


async def assign_tags(api_client: Dict[str, Any], target_name: str,
                      tags: List[str]) -> TemplateTagInfo:
    return await N.run(_S.assign_tags, api_client, target_name, tags)


async def remove_tags(api_client: Dict[str, Any], name: str, tags: List[str]) -> None:
    await N.run(_S.remove_tags, api_client, name, tags)


async def get_template_tags(api_client: Dict[str, Any], template_id: str) -> List[TemplateTag]:
    return await N.run(_S.get_template_tags, api_client, template_id)
