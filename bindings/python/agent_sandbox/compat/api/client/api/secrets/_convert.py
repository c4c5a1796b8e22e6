"""asb_secret handles as E2B's ``Secret`` model. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Optional

from ...... import lowlevel as ll
from ...models.secret import Secret
from ...models.secret_metadata import SecretMetadata
from ...types import Unset


def model(h: Any) -> Secret:
    md = {ll.asb_secret_metadata_key(h, i): ll.asb_secret_metadata_value(h, i)
          for i in range(ll.asb_secret_metadata_count(h))}

    def t(s: int) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(s, tz=_dt.timezone.utc)

    return Secret(secret_id=ll.asb_secret_id(h), name=ll.asb_secret_name(h),
                  current_version=ll.asb_secret_version(h),
                  metadata=SecretMetadata(additional_properties=md),
                  created_at=t(ll.asb_secret_created_at(h)),
                  updated_at=t(ll.asb_secret_updated_at(h)))


def metadata(md: Any) -> Optional[dict]:
    """A body's metadata as the library's "key=value" input (None: not sent)."""
    if md is None or isinstance(md, Unset):
        return None
    return dict(md.to_dict() if hasattr(md, "to_dict") else md)
