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
from ..template_sync.main import _with_timeout, get_api_client
from .build_api import assign_tags, build, check_alias_exists, get_build_status
from .build_api import get_template_tags, remove_tags

__all__ = ["AsyncTemplate"]


class AsyncTemplate(TemplateBase):
    """``AsyncTemplate()`` starts a template; ``await AsyncTemplate.build(t,
    name)`` builds it (the same steps and options as ``Template``, the
    same ``_bound_api_params``)."""

    _bound_api_params: ApiParams = {}

    @classmethod
    def _resolve_api_params(cls, **opts: Any) -> Dict[str, Any]:
        return merge_api_params(cls._bound_api_params, opts)

    @classmethod
    def _api_client(cls, opts: Dict[str, Any]) -> Any:
        return get_api_client(ConnectionConfig(**cls._resolve_api_params(**opts)))

    @staticmethod
    async def _build(api_client: Any, template: TemplateClass, name: str,
                     tags: Optional[List[str]] = None, cpu_count: int = 2,
                     memory_mb: int = 1024, skip_cache: bool = False,
                     on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                     request_timeout: Optional[float] = None,
                     background: bool = True) -> BuildInfo:
        """See ``Template._build``."""
        return await build(_with_timeout(api_client, request_timeout), template, name,
                           tags=tags, cpu_count=cpu_count, memory_mb=memory_mb,
                           skip_cache=skip_cache, on_build_logs=on_build_logs,
                           background=background)

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
            return await cls._build(get_api_client(ConnectionConfig(**params)), template, name,
                                    tags=tags, cpu_count=cpu_count, memory_mb=memory_mb,
                                    skip_cache=skip_cache, on_build_logs=on_build_logs,
                                    request_timeout=params.get("request_timeout"),
                                    background=False)
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
