"""GET /volumes (E2B's ``get_volumes``): every volume.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...types import Response
from ._convert import listed


def sync_detailed(*, client: Any) -> Response:
    err, lst = invoke(ll.asb_volumes_list, client.native(), call_options(client))
    if err:
        return err
    return ok(200, [listed(ll.asb_volume_list_get(lst, i))
                    for i in range(ll.asb_volume_list_count(lst))])


async def asyncio_detailed(*, client: Any) -> Response:
    return await in_thread(sync_detailed, client=client)
