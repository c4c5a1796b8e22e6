"""POST /secrets (E2B's ``post_secrets``): create a secret.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...models.new_secret import NewSecret
from ...types import Response
from ._convert import metadata, model


def sync_detailed(*, client: Any, body: NewSecret) -> Response:
    err, h = invoke(ll.asb_secrets_create, client.native(), body.name, body.value,
                    metadata(body.metadata), call_options(client))
    return err or ok(201, model(h))


async def asyncio_detailed(*, client: Any, body: NewSecret) -> Response:
    return await in_thread(sync_detailed, client=client, body=body)
