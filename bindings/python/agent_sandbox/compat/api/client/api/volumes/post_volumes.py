"""POST /volumes (E2B's ``post_volumes``): create a volume.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...models.new_volume import NewVolume
from ...types import Response, Unset
from ._convert import with_token


def sync_detailed(*, client: Any, body: NewVolume) -> Response:
    size = 0 if isinstance(body.size_mb, Unset) else int(body.size_mb)
    err, h = invoke(ll.asb_volumes_create, client.native(), body.name, size,
                    call_options(client))
    return err or ok(201, with_token(h))


async def asyncio_detailed(*, client: Any, body: NewVolume) -> Response:
    return await in_thread(sync_detailed, client=client, body=body)
