"""DELETE /secrets/{secretID} (E2B's ``delete_secrets_secret_id``).
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...types import Response


def sync_detailed(secret_id: str, *, client: Any) -> Response:
    err, _ = invoke(ll.asb_secrets_delete, client.native(), secret_id, call_options(client))
    return err or ok(204)


async def asyncio_detailed(secret_id: str, *, client: Any) -> Response:
    return await in_thread(sync_detailed, secret_id, client=client)
