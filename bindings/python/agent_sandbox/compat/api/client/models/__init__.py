"""E2B's generated models that agent-sandbox's ``e2b.api`` answers with.
SPDX-License-Identifier: Apache-2.0"""

from .connect_sandbox import ConnectSandbox
from .error import Error
from .new_sandbox import NewSandbox
from .new_secret import NewSecret
from .sandbox import Sandbox
from .sandbox_auto_resume_config import SandboxAutoResumeConfig
from .sandbox_iam import SandboxIam, SandboxIamToken, SandboxIamTokens
from .sandbox_network_config import (
    SandboxEgressProxyConfigType0,
    SandboxNetworkConfig,
    SandboxNetworkRules,
    SandboxNetworkUpdate,
)
from .secret import Secret
from .secret_metadata import SecretMetadata
from .secret_update import SecretUpdate
from .new_volume import NewVolume
from .volume import Volume
from .volume_and_token import VolumeAndToken

__all__ = ["ConnectSandbox", "Error", "Sandbox", "NewSandbox", "NewSecret", "SandboxAutoResumeConfig", "SandboxIam",
           "SandboxIamToken", "SandboxIamTokens", "SandboxEgressProxyConfigType0",
           "SandboxNetworkConfig", "SandboxNetworkRules", "SandboxNetworkUpdate", "Secret",
           "SecretMetadata", "SecretUpdate", "NewVolume", "Volume", "VolumeAndToken"]
