"""``e2b.template_async``: E2B's ``AsyncTemplate``.
SPDX-License-Identifier: Apache-2.0"""

from .main import AsyncTemplate

__all__ = ["AsyncTemplate"]
