"""E2B's IAM option helpers (``e2b.sandbox.iam``, ``build_iam_config`` of
``e2b.sandbox.sandbox_api``): checking a create's ``iam={"tokens": ...}``
and turning it into the body's ``SandboxIam`` model. agent-sandbox mints no
workload identity tokens, so ``create`` warns about ``iam`` and sends
nothing; these are what E2B programs (and E2B's tests) build the option
with. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..exceptions import InvalidArgumentException
from .api.client.models.sandbox_iam import SandboxIam, SandboxIamToken, SandboxIamTokens

_BAD = re.compile(r"[{}\x00-\x1f\x7f-\x9f]")


def validate_iam_token_name(name: Any) -> None:
    if not isinstance(name, str) or not name or _BAD.search(name):
        raise InvalidArgumentException(
            f"iam token name {name!r} is not usable: a token name must be a non-empty string "
            "and cannot contain '{', '}' or control characters, because it is interpolated "
            "into the '${e2b.identity.tokens.<name>}' placeholder the egress proxy resolves.")


def build_iam_config(iam: Optional[Any]) -> Optional[SandboxIam]:
    """The ``SandboxIam`` body for ``iam``, or None when it has no tokens."""
    if iam is None:
        return None
    tokens = iam.get("tokens")
    if not tokens:
        return None
    out = SandboxIamTokens()
    for name, token in tokens.items():
        if (not isinstance(token, dict) or not isinstance(token.get("audience"), str)
                or not isinstance(token.get("token_type"), str)):
            raise InvalidArgumentException(
                f"iam token {name!r} must be a dict with string 'audience' and 'token_type' "
                "values (snake_case 'token_type', not 'tokenType').")
        validate_iam_token_name(name)
        out[name] = SandboxIamToken(audience=token["audience"], token_type=token["token_type"])
    return SandboxIam(tokens=out)
