"""POST /secrets/{secretID} (E2B's ``post_secrets_secret_id``): a new value.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...models.secret_update import SecretUpdate
from ...types import Response
from ._convert import metadata, model


def sync_detailed(secret_id: str, *, client: Any, body: SecretUpdate) -> Response:
    err, h = invoke(ll.asb_secrets_update, client.native(), secret_id, body.value,
                    metadata(body.metadata), call_options(client))
    return err or ok(200, model(h))


async def asyncio_detailed(secret_id: str, *, client: Any, body: SecretUpdate) -> Response:
    return await in_thread(sync_detailed, secret_id, client=client, body=body)
