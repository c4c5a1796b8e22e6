"""GET /volumes/{volumeID} (E2B's ``get_volumes_volume_id``): a volume
(by id or name) with its token. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...types import Response
from ._convert import with_token


def sync_detailed(volume_id: str, *, client: Any) -> Response:
    err, h = invoke(ll.asb_volumes_get, client.native(), volume_id, call_options(client))
    return err or ok(200, with_token(h))


async def asyncio_detailed(volume_id: str, *, client: Any) -> Response:
    return await in_thread(sync_detailed, volume_id, client=client)
