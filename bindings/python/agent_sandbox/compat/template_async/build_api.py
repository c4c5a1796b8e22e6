"""``e2b.template_async.build_api``: the builder's calls, awaited (each
runs the sync call of ``template_sync.build_api`` on a worker thread; a
cancelled task cancels the C call).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any, Dict, List

from ... import _native as N
from ..template.types import BuildInfo, TemplateBuildStatusResponse, TemplateTag
from ..template.types import TemplateTagInfo
from ..template_sync import build_api as _S

__all__ = ["build", "get_build_status", "check_alias_exists", "assign_tags", "remove_tags",
           "get_template_tags"]


async def build(api_client: Dict[str, Any], template: Any, name: str, **kw: Any) -> BuildInfo:
    return await N.run(_S.build, api_client, template, name, **kw)


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
