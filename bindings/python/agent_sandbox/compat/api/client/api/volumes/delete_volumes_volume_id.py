"""DELETE /volumes/{volumeID} (E2B's ``delete_volumes_volume_id``): a
volume and its files (refused while a sandbox mounts it).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...types import Response


def sync_detailed(volume_id: str, *, client: Any) -> Response:
    err, _ = invoke(ll.asb_volumes_delete, client.native(), volume_id, call_options(client))
    return err or ok(204)


async def asyncio_detailed(volume_id: str, *, client: Any) -> Response:
    return await in_thread(sync_detailed, volume_id, client=client)
