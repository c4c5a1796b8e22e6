"""E2B's generated models that agent-sandbox's ``e2b.api`` answers with.
SPDX-License-Identifier: Apache-2.0"""

from .error import Error
from .new_secret import NewSecret
from .secret import Secret
from .secret_metadata import SecretMetadata
from .secret_update import SecretUpdate

__all__ = ["Error", "NewSecret", "Secret", "SecretMetadata", "SecretUpdate"]
