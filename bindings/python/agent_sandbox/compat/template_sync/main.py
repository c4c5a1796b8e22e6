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
from .build_api import assign_tags, build_spec, check_alias_exists, files_hash
from .build_api import get_build_status, get_file_upload_link, get_template_tags, remove_tags
from .build_api import request_build, trigger_build, upload_file, wait_for_build_finish

__all__ = ["Template"]


def get_api_client(config: ConnectionConfig) -> Dict[str, Any]:
    """E2B's API client for a ``ConnectionConfig``: here the library's
    connection options of what it was given."""
    from .. import _conn

    return _conn(config.get_api_params())


def _now() -> datetime:
    return datetime.now()


def _info(message: str) -> LogEntry:
    return LogEntry(timestamp=datetime.now(), level="info", message=message)


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

    _logs_refresh_frequency = 0.2  # seconds between two status polls

    @staticmethod
    def _build(api_client: Any, template: TemplateClass, name: str,
               tags: Optional[List[str]] = None, cpu_count: int = 2, memory_mb: int = 1024,
               skip_cache: bool = False,
               on_build_logs: Optional[Callable[[LogEntry], None]] = None,
               request_timeout: Optional[float] = None) -> BuildInfo:
        """Request the build, upload each COPY step's files the engine does
        not have, start the build; E2B's steps, in its order, through this
        module's names (request_build, get_file_upload_link, upload_file,
        trigger_build), each a call of the C library."""
        api_client = _with_timeout(api_client, request_timeout)
        t = template._template
        if skip_cache:
            t._force = True
        log = on_build_logs or (lambda entry: None)
        tags_msg = f" with tags: {', '.join(tags)}" if tags else ""
        log(_info(f"Requesting build for template: {name}{tags_msg}"))
        response = request_build(api_client, name=name, cpu_count=cpu_count,
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
            hashes[index] = files_hash(t, step, stack_trace)
            info = get_file_upload_link(api_client, template_id, hashes[index], stack_trace)
            if (step.get("forceUpload") and info.url) or (info.present is False and info.url):
                upload_file(api_client, src, t._file_context_path, info.url,
                            list(t._file_ignore_patterns),
                            len(step["args"]) > 4 and step["args"][4] == "true", True,
                            stack_trace, request_timeout=request_timeout)
                log(_info(f"Uploaded '{src}'"))
            else:
                log(_info(f"Skipping upload of '{src}', already cached"))
        log(_info("All file uploads completed"))
        log(_info("Starting building..."))
        trigger_build(api_client, template_id, build_id, build_spec(spec, hashes))
        return BuildInfo(template_id=template_id, build_id=build_id, alias=name, name=name,
                         tags=list(response.tags or []))

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
            api_client = get_api_client(ConnectionConfig(**params))
            data = cls._build(api_client, template, name, tags=tags, cpu_count=cpu_count,
                              memory_mb=memory_mb, skip_cache=skip_cache,
                              on_build_logs=on_build_logs,
                              request_timeout=params.get("request_timeout"))
            if on_build_logs:
                on_build_logs(_info("Waiting for logs..."))
            wait_for_build_finish(_with_timeout(api_client, params.get("request_timeout")),
                                  data.template_id, data.build_id, on_build_logs,
                                  logs_refresh_frequency=cls._logs_refresh_frequency,
                                  stack_traces=template._template._stack_traces)
            return data
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
