"""An error status as E2B's Response. SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import json
from http import HTTPStatus

from ...models.error import Error
from ...types import Response


def error_response(http: int, message: str) -> Response:
    return Response(status_code=HTTPStatus(http),
                    content=json.dumps({"code": http, "message": message}).encode(),
                    headers={}, parsed=Error(code=http, message=message))
