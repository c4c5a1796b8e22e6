"""E2B's generated ``errors``. SPDX-License-Identifier: Apache-2.0"""


class UnexpectedStatus(Exception):
    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code = status_code
        self.content = content
        super().__init__(f"Unexpected status code: {status_code}")
