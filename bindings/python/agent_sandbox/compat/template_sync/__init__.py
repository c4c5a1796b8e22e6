"""``e2b.template_sync``: E2B's ``Template`` (sync).
SPDX-License-Identifier: Apache-2.0"""

from .main import Template

__all__ = ["Template"]
