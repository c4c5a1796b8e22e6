"""Stands in for E2B's packages/python-sdk/tests/conftest.py when its
suite runs through agent_sandbox.compat (tests/e2b-python/run.sh).

The same fixtures with the same behaviour (sandbox, async_sandbox, their
factories with the sandbox_test_id metadata, template, debug,
skip_by_debug, helpers, build/async_build); E2B's volume and
async_volume patch its own volume transport with an in-memory mock, ours
make a real volume on the engine. Imports come from ``e2b``, which the shim
next to this file maps to agent_sandbox.compat.
SPDX-License-Identifier: Apache-2.0
"""

import asyncio
import os
import random
import string
from typing import Callable, Dict, Optional

import pytest
import pytest_asyncio

from e2b import (  # the shim: agent_sandbox.compat
    AsyncCommandHandle,
    AsyncSandbox,
    CommandExitException,
    CommandHandle,
    Sandbox,
)


@pytest.fixture
def test_api_key() -> str:
    return "e2b_" + "0" * 40


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item._test_failed = rep.failed


def _generate_random_string(length: int = 8) -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=length))


@pytest.fixture()
def sandbox_test_id():
    return f"test_{_generate_random_string()}"


@pytest.fixture()
def template():
    return "base"


@pytest.fixture()
def httpbin_template():
    return "httpbin"


@pytest.fixture()
def sandbox_factory(request, template, sandbox_test_id):
    def factory(*, template_name: str = template, **kwargs):
        metadata = kwargs.setdefault("metadata", dict())
        metadata.setdefault("sandbox_test_id", sandbox_test_id)
        sandbox = Sandbox.create(template_name, **kwargs)

        def finalizer():
            sandbox.kill()

        request.addfinalizer(finalizer)
        return sandbox

    return factory


@pytest.fixture()
def sandbox(sandbox_factory):
    return sandbox_factory()


@pytest_asyncio.fixture
async def async_sandbox_factory(request, template, sandbox_test_id):
    sandboxes: list = []

    async def factory(*, template_name: str = template, **kwargs):
        metadata = kwargs.setdefault("metadata", dict())
        metadata.setdefault("sandbox_test_id", sandbox_test_id)
        sandbox = await AsyncSandbox.create(template_name, **kwargs)
        sandboxes.append(sandbox)
        return sandbox

    yield factory
    await asyncio.gather(*(s.kill() for s in sandboxes), return_exceptions=True)


@pytest_asyncio.fixture
async def async_sandbox(async_sandbox_factory):
    return await async_sandbox_factory()


@pytest.fixture
def build():
    def _build(template, name: Optional[str] = None, skip_cache: bool = False,
               on_build_logs: Optional[Callable] = None):
        from e2b import Template

        return Template.build(template, name or f"e2b-test-{_generate_random_string()}",
                              cpu_count=1, memory_mb=1024, skip_cache=skip_cache,
                              on_build_logs=on_build_logs)

    return _build


@pytest_asyncio.fixture
def async_build():
    async def _async_build(template, name: Optional[str] = None, skip_cache: bool = False,
                           on_build_logs: Optional[Callable] = None):
        from e2b import AsyncTemplate

        return await AsyncTemplate.build(template,
                                         name or f"e2b-test-{_generate_random_string()}",
                                         cpu_count=1, memory_mb=1024, skip_cache=skip_cache,
                                         on_build_logs=on_build_logs)

    return _async_build


@pytest.fixture
def debug():
    return os.getenv("E2B_DEBUG") is not None


@pytest.fixture(autouse=True)
def skip_by_debug(request, debug):
    if request.node.get_closest_marker("skip_debug"):
        if debug:
            pytest.skip("skipped because E2B_DEBUG is set")


class Helpers:
    @staticmethod
    def catch_cmd_exit_error_in_background(cmd: AsyncCommandHandle):
        disabled = False

        async def wait_for_exit():
            try:
                await cmd.wait()
            except CommandExitException as e:
                if not disabled:
                    assert False, f"command failed with exit code {e.exit_code}: {e.stderr}"

        asyncio.create_task(wait_for_exit())

        def disable():
            nonlocal disabled
            disabled = True

        return disable

    @staticmethod
    def check_cmd_exit_error(cmd: CommandHandle):
        try:
            cmd.wait()
        except CommandExitException as e:
            assert False, f"command failed with exit code {e.exit_code}: {e.stderr}"


@pytest.fixture
def helpers():
    return Helpers


# E2B's volume fixtures mock its volume transport; these make a real volume
# on the engine instead (the same Volume object the tests expect), and
# destroy it afterwards.
@pytest.fixture
def volume(request):
    from e2b import Volume

    vol = Volume.create(f"test-vol-{_generate_random_string()}")
    request.addfinalizer(lambda: Volume.destroy(vol.volume_id))
    return vol


@pytest_asyncio.fixture
async def async_volume():
    from e2b import AsyncVolume

    vol = await AsyncVolume.create(f"test-vol-{_generate_random_string()}")
    yield vol
    await AsyncVolume.destroy(vol.volume_id)
