"""asb_volume handles as E2B's volume models. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

from typing import Any

from ...... import lowlevel as ll
from ...models.volume import Volume
from ...models.volume_and_token import VolumeAndToken


def with_token(h: Any) -> VolumeAndToken:
    return VolumeAndToken(volume_id=ll.asb_volume_id(h), name=ll.asb_volume_name(h),
                          token=ll.asb_volume_token(h), size_mb=ll.asb_volume_size_mb(h))


def listed(h: Any) -> Volume:
    return Volume(volume_id=ll.asb_volume_id(h), name=ll.asb_volume_name(h),
                  size_mb=ll.asb_volume_size_mb(h))
