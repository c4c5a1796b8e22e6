"""``e2b.template_async.main``: E2B's ``AsyncTemplate``: ``Template``'s
builder with its class methods awaited.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Union

from ..connection_config import ApiParams, ConnectionConfig, merge_api_params
from ..template.logger import LogEntry, LogEntryEnd, LogEntryStart
from ..template.main import TemplateBase, TemplateClass
from ..template.types import BuildInfo, TemplateBuildStatusResponse, TemplateTag
from ..template.types import TemplateTagInfo
from ..template.utils import normalize_build_arguments
from ..template_sync.main import _info, _with_timeout, get_api_client
from .build_api import assign_tags, build_spec, check_alias_exists, files_hash
from .build_api import get_build_status, get_file_upload_link, get_template_tags, remove_tags
from .build_api import request_build, trigger_build, upload_file, wait_for_build_finish

__all__ = ["AsyncTemplate"]


class AsyncTemplate(TemplateBase):
    """``AsyncTemplate()`` starts a template; ``await AsyncTemplate.build(t,
    name)`` builds it (the same steps and options as ``Template``, the
    same ``_bound_api_params``)."""

    _bound_api_params: ApiParams = {}

    @classmethod
    def _resolve_api_params(cls, **opts: Any) -> Dict[str, Any]:
        return merge_api_params(cls._bound_api_params, opts)

    # Written out here, not shared with Template: it must call this
    # module's get_api_client, the name E2B's async tests patch
    # (e2b.template_async.main.get_api_client).
    @classmethod
    def _api_client(cls, opts: Dict[str, Any]) -> Any:
        return get_api_client(ConnectionConfig(**cls._resolve_api_params(**opts)))

    _logs_refresh_frequency = 0.2  # seconds between two status polls

    @staticmethod
    async def _build(api_client: Any, template: TemplateClass, name: str,
                     tags: Optional[List[str]] = None, cpu_count: int = 2,
                     memory_mb: int = 1024, skip_cache: bool = False,
                     on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                     request_timeout: Optional[float] = None) -> BuildInfo:
        """See ``Template._build``: the same steps, awaited, through this
        module's names (the ones E2B's async tests patch)."""
        api_client = _with_timeout(api_client, request_timeout)
        t = template._template
        if skip_cache:
            t._force = True
        log = on_build_logs or (lambda entry: None)
        tags_msg = f" with tags: {', '.join(tags)}" if tags else ""
        log(_info(f"Requesting build for template: {name}{tags_msg}"))
        response = await request_build(api_client, name=name, cpu_count=cpu_count,
                                       memory_mb=memory_mb, tags=tags)
        template_id, build_id = response.template_id, response.build_id
        log(_info(f"Template created with ID: {template_id}, Build ID: {build_id}"))
        spec = t._serialize(for_build=True)
        hashes: Dict[int, str] = {}
        for index, step in enumerate(spec["steps"]):
            if step["type"] != "COPY" or step.get("filesHash"):
                continue
            src = step["args"][0]
            stack_trace = t._stack_traces[index + 1] if index + 1 < len(t._stack_traces) else None
            hashes[index] = await files_hash(t, step, stack_trace)
            info = await get_file_upload_link(api_client, template_id, hashes[index], stack_trace)
            if (step.get("forceUpload") and info.url) or (info.present is False and info.url):
                await upload_file(api_client, src, t._file_context_path, info.url,
                                  list(t._file_ignore_patterns),
                                  len(step["args"]) > 4 and step["args"][4] == "true", True,
                                  stack_trace, request_timeout=request_timeout)
                log(_info(f"Uploaded '{src}'"))
            else:
                log(_info(f"Skipping upload of '{src}', already cached"))
        log(_info("All file uploads completed"))
        log(_info("Starting building..."))
        await trigger_build(api_client, template_id, build_id, build_spec(spec, hashes))
        return BuildInfo(template_id=template_id, build_id=build_id, alias=name, name=name,
                         tags=list(response.tags or []))

    @classmethod
    async def build(cls, template: TemplateClass, name: Optional[str] = None, *,
                    alias: Optional[str] = None, tags: Optional[List[str]] = None,
                    cpu_count: int = 2, memory_mb: int = 1024, skip_cache: bool = False,
                    on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                    **opts: Any) -> BuildInfo:
        """See ``Template.build``."""
        name = normalize_build_arguments(name, alias)
        if on_build_logs:
            on_build_logs(LogEntryStart(timestamp=datetime.now(), message="Build started"))
        try:
            params = cls._resolve_api_params(**opts)
            api_client = get_api_client(ConnectionConfig(**params))
            data = await cls._build(api_client, template, name, tags=tags,
                                    cpu_count=cpu_count, memory_mb=memory_mb,
                                    skip_cache=skip_cache, on_build_logs=on_build_logs,
                                    request_timeout=params.get("request_timeout"))
            if on_build_logs:
                on_build_logs(_info("Waiting for logs..."))
            await wait_for_build_finish(
                _with_timeout(api_client, params.get("request_timeout")), data.template_id,
                data.build_id, on_build_logs, logs_refresh_frequency=cls._logs_refresh_frequency,
                stack_traces=template._template._stack_traces)
            return data
        finally:
            if on_build_logs:
                on_build_logs(LogEntryEnd(timestamp=datetime.now(), message="Build finished"))

    @classmethod
    async def build_in_background(cls, template: TemplateClass, name: Optional[str] = None, *,
                                  alias: Optional[str] = None, tags: Optional[List[str]] = None,
                                  cpu_count: int = 2, memory_mb: int = 1024,
                                  skip_cache: bool = False,
                                  on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                                  **opts: Any) -> BuildInfo:
        name = normalize_build_arguments(name, alias)
        params = cls._resolve_api_params(**opts)
        return await cls._build(get_api_client(ConnectionConfig(**params)), template, name,
                                tags=tags, cpu_count=cpu_count, memory_mb=memory_mb,
                                skip_cache=skip_cache, on_build_logs=on_build_logs,
                                request_timeout=params.get("request_timeout"))

    @classmethod
    async def get_build_status(cls, build_info: BuildInfo, logs_offset: int = 0,
                               **opts: Any) -> TemplateBuildStatusResponse:
        return await get_build_status(cls._api_client(opts), build_info.template_id,
                                      build_info.build_id, logs_offset)

    @classmethod
    async def exists(cls, name: str, **opts: Any) -> bool:
        return await check_alias_exists(cls._api_client(opts), name)

    @classmethod
    async def alias_exists(cls, alias: str, **opts: Any) -> bool:
        return await check_alias_exists(cls._api_client(opts), alias)

    @classmethod
    async def assign_tags(cls, target_name: str, tags: Union[str, List[str]],
                          **opts: Any) -> TemplateTagInfo:
        return await assign_tags(cls._api_client(opts), target_name,
                                 [tags] if isinstance(tags, str) else list(tags))

    @classmethod
    async def remove_tags(cls, name: str, tags: Union[str, List[str]], **opts: Any) -> None:
        await remove_tags(cls._api_client(opts), name,
                          [tags] if isinstance(tags, str) else list(tags))

    @classmethod
    async def get_tags(cls, template_id: str, **opts: Any) -> List[TemplateTag]:
        return await get_template_tags(cls._api_client(opts), template_id)
