"""``e2b.template.readycmd``: ready checks for ``set_start_cmd`` /
``set_ready_cmd``. Each is a shell command the engine retries until it
exits 0 (docs/templates.md, "The start command and the ready check"); the
commands are E2B's, so templates behave the same on both.
SPDX-License-Identifier: Apache-2.0"""

from shlex import quote as _q

__all__ = ["ReadyCmd", "wait_for_port", "wait_for_url", "wait_for_process", "wait_for_file",
           "wait_for_timeout"]


class ReadyCmd:
    """A ready check: the shell command that says the sandbox is ready."""

    def __init__(self, cmd: str):
        self.__cmd = cmd

    def get_cmd(self) -> str:
        return self.__cmd

    def __repr__(self) -> str:
        return f"ReadyCmd({self.__cmd!r})"


def wait_for_port(port: int) -> ReadyCmd:
    """Ready once something listens on ``port`` (TCP or UDP; needs ``ss``)."""
    return ReadyCmd(f'[ -n "$(ss -Htuln sport = :{int(port)})" ]')


def wait_for_url(url: str, status_code: int = 200) -> ReadyCmd:
    """Ready once ``url`` answers with ``status_code`` (needs ``curl``)."""
    return ReadyCmd(f'curl -s -o /dev/null -w "%{{http_code}}" {_q(url)} '
                    f'| grep -q "{int(status_code)}"')


def wait_for_process(process_name: str) -> ReadyCmd:
    """Ready once a process of that name runs (``pgrep``)."""
    return ReadyCmd(f"pgrep {_q(process_name)} > /dev/null")


def wait_for_file(filename: str) -> ReadyCmd:
    """Ready once the file exists."""
    return ReadyCmd(f"[ -f {_q(filename)} ]")


def wait_for_timeout(timeout: int) -> ReadyCmd:
    """Ready after ``timeout`` milliseconds (whole seconds, at least 1)."""
    return ReadyCmd(f"sleep {max(1, int(timeout) // 1000)}")
