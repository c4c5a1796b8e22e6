"""GET /secrets (E2B's ``get_secrets``): one page, its next token in the
``x-next-token`` header as the API sends it. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any, Union

from ...... import lowlevel as ll
from ...._call import call_options, in_thread, invoke, ok
from ...types import UNSET, Response, Unset
from ._convert import model


def sync_detailed(*, client: Any, limit: Union[Unset, int] = UNSET,
                  next_token: Union[Unset, str] = UNSET) -> Response:
    err, page = invoke(ll.asb_secrets_list, client.native(),
                       0 if isinstance(limit, Unset) else int(limit),
                       None if isinstance(next_token, Unset) else next_token,
                       call_options(client))
    if err:
        return err
    items = [model(ll.asb_secret_page_get(page, i)) for i in range(ll.asb_secret_page_count(page))]
    nt = ll.asb_secret_page_next_token(page)
    return ok(200, items, {"x-next-token": nt} if nt else {})


async def asyncio_detailed(*, client: Any, limit: Union[Unset, int] = UNSET,
                           next_token: Union[Unset, str] = UNSET) -> Response:
    return await in_thread(sync_detailed, client=client, limit=limit, next_token=next_token)
