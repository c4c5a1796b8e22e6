"""``e2b.template_sync.main``: E2B's ``Template`` (sync): the builder of
``e2b.template.main`` plus ``build``, ``build_in_background``,
``get_build_status``, ``exists``/``alias_exists`` and tags, each on the C
library. Connection options are E2B's (``api_key``, ``domain``,
``api_url``, ``request_timeout``, ``headers``...), resolved as E2B does:
the call's, then the class's ``_bound_api_params``, then the environment
(a ``ConnectionConfig``, which ``get_api_client`` turns into the
library's options).
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
from .build_api import assign_tags, build, check_alias_exists, get_build_status
from .build_api import get_template_tags, remove_tags

__all__ = ["Template"]


def get_api_client(config: ConnectionConfig) -> Dict[str, Any]:
    """E2B's API client for a ``ConnectionConfig``: here the library's
    connection options of what it was given."""
    from .. import _conn

    return _conn(config.get_api_params())


def _now() -> datetime:
    return datetime.now()


def _with_timeout(api_client: Any, request_timeout: Optional[float]) -> Any:
    if request_timeout is None or not isinstance(api_client, dict):
        return api_client
    return {**api_client, "request_timeout": request_timeout}


class Template(TemplateBase):
    """``Template()`` starts a template (see ``TemplateBase``); the class
    methods build it and manage built ones. Connection options a subclass
    binds in ``_bound_api_params`` (as E2B's client objects do) are the
    defaults of every call; a call's own options win unless None."""

    _bound_api_params: ApiParams = {}

    @classmethod
    def _resolve_api_params(cls, **opts: Any) -> Dict[str, Any]:
        return merge_api_params(cls._bound_api_params, opts)

    @classmethod
    def _api_client(cls, opts: Dict[str, Any]) -> Any:
        return get_api_client(ConnectionConfig(**cls._resolve_api_params(**opts)))

    @staticmethod
    def _build(api_client: Any, template: TemplateClass, name: str,
               tags: Optional[List[str]] = None, cpu_count: int = 2, memory_mb: int = 1024,
               skip_cache: bool = False,
               on_build_logs: Optional[Callable[[LogEntry], None]] = None,
               request_timeout: Optional[float] = None, background: bool = True) -> BuildInfo:
        """Start building (``background``; else build and wait): one call
        of the C library, which uploads the files, starts the build and
        follows it."""
        return build(_with_timeout(api_client, request_timeout), template, name, tags=tags,
                     cpu_count=cpu_count, memory_mb=memory_mb, skip_cache=skip_cache,
                     on_build_logs=on_build_logs, background=background)

    @classmethod
    def build(cls, template: TemplateClass, name: Optional[str] = None, *,
              alias: Optional[str] = None, tags: Optional[List[str]] = None,
              cpu_count: int = 2, memory_mb: int = 1024, skip_cache: bool = False,
              on_build_logs: Optional[Callable[[LogEntry], None]] = None,
              **opts: Any) -> BuildInfo:
        """Build ``template`` as ``name`` (``"app"`` or ``"app:tag"``) and
        wait until it is ready; ``on_build_logs`` gets each log entry.
        :class:`BuildException` when a step fails (its traceback points at
        the step's line)."""
        name = normalize_build_arguments(name, alias)
        if on_build_logs:
            on_build_logs(LogEntryStart(timestamp=_now(), message="Build started"))
        try:
            params = cls._resolve_api_params(**opts)
            return cls._build(get_api_client(ConnectionConfig(**params)), template, name,
                              tags=tags, cpu_count=cpu_count, memory_mb=memory_mb,
                              skip_cache=skip_cache, on_build_logs=on_build_logs,
                              request_timeout=params.get("request_timeout"), background=False)
        finally:
            if on_build_logs:
                on_build_logs(LogEntryEnd(timestamp=_now(), message="Build finished"))

    @classmethod
    def build_in_background(cls, template: TemplateClass, name: Optional[str] = None, *,
                            alias: Optional[str] = None, tags: Optional[List[str]] = None,
                            cpu_count: int = 2, memory_mb: int = 1024, skip_cache: bool = False,
                            on_build_logs: Optional[Callable[[LogEntry], None]] = None,
                            **opts: Any) -> BuildInfo:
        """Upload the files and start the build; return without waiting
        (follow it with :meth:`get_build_status`)."""
        name = normalize_build_arguments(name, alias)
        params = cls._resolve_api_params(**opts)
        return cls._build(get_api_client(ConnectionConfig(**params)), template, name, tags=tags,
                          cpu_count=cpu_count, memory_mb=memory_mb, skip_cache=skip_cache,
                          on_build_logs=on_build_logs,
                          request_timeout=params.get("request_timeout"))

    @classmethod
    def get_build_status(cls, build_info: BuildInfo, logs_offset: int = 0,
                         **opts: Any) -> TemplateBuildStatusResponse:
        """The state of a build and its log entries from ``logs_offset``."""
        return get_build_status(cls._api_client(opts), build_info.template_id,
                                build_info.build_id, logs_offset)

    @classmethod
    def exists(cls, name: str, **opts: Any) -> bool:
        """Whether a template of that name exists."""
        return check_alias_exists(cls._api_client(opts), name)

    @classmethod
    def alias_exists(cls, alias: str, **opts: Any) -> bool:
        return check_alias_exists(cls._api_client(opts), alias)

    @classmethod
    def assign_tags(cls, target_name: str, tags: Union[str, List[str]],
                    **opts: Any) -> TemplateTagInfo:
        """Make ``tags`` name the build ``target_name`` (``"app:v1"``) names."""
        return assign_tags(cls._api_client(opts), target_name,
                           [tags] if isinstance(tags, str) else list(tags))

    @classmethod
    def remove_tags(cls, name: str, tags: Union[str, List[str]], **opts: Any) -> None:
        remove_tags(cls._api_client(opts), name, [tags] if isinstance(tags, str) else list(tags))

    @classmethod
    def get_tags(cls, template_id: str, **opts: Any) -> List[TemplateTag]:
        return get_template_tags(cls._api_client(opts), template_id)
