"""@sandbox: functions run in a sandbox (sync and async), arguments and
results as json or pickle, remote exceptions with their traceback,
keep_alive and a given sandbox.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import datetime as dt
import traceback

import pytest

from agent_sandbox import RemoteError, RemoteTraceback, Sandbox, sandbox


@sandbox
def where_am_i(x, y=2):
    import socket

    return {"host": socket.gethostname(), "sum": x + y}


@sandbox(serializer="pickle", keep_alive=True)
def with_pickle(d):
    import datetime

    return d + datetime.timedelta(days=1), {1, 2, 3}


@sandbox(timeout=60)
async def async_fn(n):
    import asyncio

    await asyncio.sleep(0.01)
    return [i * i for i in range(n)]


@sandbox(stream_output=False)
def fails(kind):
    def inner():
        if kind == "value":
            raise ValueError("bad value")
        raise LookupError("custom")

    inner()


class Custom(Exception):
    pass


@sandbox(serializer="pickle")
def fails_custom():
    class Local(Exception):
        pass

    raise Local("not picklable here")


def test_sync_call_in_a_fresh_sandbox(engine):
    r = where_am_i(40)
    assert r["sum"] == 42 and len(r["host"]) == 20  # the sandbox id is its hostname
    r2 = where_am_i(1, y=1)
    assert r2["sum"] == 2 and r2["host"] != r["host"]  # a new sandbox per call
    assert Sandbox.list_sync(metadata=None) is not None


def test_pickle_and_keep_alive(engine):
    d = dt.date(2024, 2, 28)
    nxt, s = with_pickle(d)
    assert nxt == dt.date(2024, 2, 29) and s == {1, 2, 3}
    first = with_pickle.current_sandbox()
    with_pickle(d)
    assert with_pickle.current_sandbox() is first  # reused
    with_pickle.close()
    assert with_pickle.current_sandbox() is None
    assert first.is_running() is False


async def test_async_function(engine):
    assert await async_fn(5) == [0, 1, 4, 9, 16]
    results = await asyncio.gather(async_fn(3), async_fn(4))
    assert results == [[0, 1, 4], [0, 1, 4, 9]]


def test_remote_exception_with_traceback(engine):
    with pytest.raises(ValueError, match="bad value") as ei:
        fails("value")
    cause = ei.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "inner()" in cause.tb and "raise ValueError" in cause.tb
    assert "Remote traceback" in "".join(traceback.format_exception(ei.value))
    with pytest.raises(LookupError):
        fails("other")
    with pytest.raises(RemoteError) as ei2:
        fails_custom()
    assert ei2.value.type_name == "Local" and "raise Local" in ei2.value.remote_traceback


def test_given_sandbox_is_reused_and_kept(engine, capfd):
    sb = Sandbox.create_sync()
    try:
        @sandbox(sandbox=sb)
        def write_marker():
            print("hello from inside")
            open("/tmp/marker", "w").write("m")
            return 1

        assert write_marker() == 1
        assert sb.files.read_sync("/tmp/marker") == "m"
        assert "hello from inside" in capfd.readouterr().out

        @sandbox(sandbox_id=sb.sandbox_id)
        def read_marker():
            return open("/tmp/marker").read()

        assert read_marker() == "m"
        assert sb.is_running_sync()  # not killed
    finally:
        sb.kill_sync()


def test_closures_and_lambdas_refused():
    y = 3

    with pytest.raises(TypeError, match="closure"):
        @sandbox
        def uses_y():
            return y

    with pytest.raises(TypeError, match="lambda"):
        sandbox(lambda: 1)
