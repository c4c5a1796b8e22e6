"""E2B's IAM and network option helpers (``e2b.sandbox.iam``;
``build_iam_config``, ``build_network_config``,
``build_network_update_body``, ``from_client_network_config`` of
``e2b.sandbox.sandbox_api``): checking a create's ``iam={"tokens": ...}``
and turning it into the body's ``SandboxIam`` model. agent-sandbox mints no
workload identity tokens, so ``create`` warns about ``iam`` and sends
nothing; these are what E2B programs (and E2B's tests) build the option
with. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional

from .. import _netconf
from ..exceptions import InvalidArgumentException
from .api.client.models.sandbox_iam import SandboxIam, SandboxIamToken, SandboxIamTokens
from .api.client.models.sandbox_network_config import (
    SandboxEgressProxyConfigType0,
    SandboxNetworkRules,
    SandboxNetworkUpdate,
)
from .api.client.types import Unset

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


# ---- e2b.sandbox.sandbox_api's network helpers ------------------------------------------


def _iam_names(iam: Any) -> Any:
    tokens = getattr(iam, "tokens", None)
    return () if tokens is None or isinstance(tokens, Unset) else list(tokens)


def build_network_config(network: Optional[Any], iam: Optional[SandboxIam] = None
                         ) -> Optional[Dict[str, Any]]:
    """E2B's create-body network fields for ``network`` (snake_case keys;
    ``rules`` and ``egress_proxy`` as models), callables resolved; a
    transform may reference only the tokens ``iam`` registers."""
    body = _netconf.to_wire(network, tokens=_iam_names(iam))
    if body is None:
        return None
    out: Dict[str, Any] = {}
    for wire, v in body.items():
        if wire == "egressProxy":
            v = SandboxEgressProxyConfigType0.from_dict(v)
        elif wire == "rules":
            v = SandboxNetworkRules.from_dict(v)
        out[_netconf._PY.get(wire, wire)] = v
    return out


def build_network_update_body(network: Any) -> SandboxNetworkUpdate:
    """E2B's PUT /sandboxes/{id}/network body (what it leaves out is
    cleared); a transform may reference any token name (the body has no
    iam)."""
    return SandboxNetworkUpdate(body=_netconf.to_wire(network or {}, update=True) or {})


def from_client_network_config(config: Any) -> Optional[Dict[str, Any]]:
    """A ``SandboxNetworkConfig`` model as E2B's ``SandboxNetworkInfo``
    (snake_case; the egress proxy without its password)."""
    if config is None or isinstance(config, Unset):
        return None
    return _netconf.from_json(json.dumps(config.to_dict()))
