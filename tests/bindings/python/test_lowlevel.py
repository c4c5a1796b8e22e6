"""agent_sandbox.lowlevel, the SWIG module over the C ABI: status codes and
the last error, options structs (string and vector members own copies),
output parameters, callbacks (an exception in one aborts the C call with
ASB_EUSER and is handed back), and the GIL being released around blocking
calls only.
SPDX-License-Identifier: Apache-2.0"""

import threading
import time

import pytest

from agent_sandbox import lowlevel as ll


def test_version_and_errors():
    version, major, minor, patch = ll.asb_version()
    assert version == f"{major}.{minor}.{patch}"
    assert ll.asb_status_name(ll.ASB_ENOTFOUND) == "ASB_ENOTFOUND"
    assert ll.asb_strerror(ll.ASB_EINVAL)
    o = ll.asb_client_options()
    o.api_url = "not a url"
    rc, client = ll.asb_client_new(o)
    assert rc == ll.ASB_EINVAL and client is None
    code, http, message, remote, retry, reason = ll.asbpy_error_last()
    assert code == ll.ASB_EINVAL and "not a url" in message
    err = ll.asb_error_last()
    assert err.code == ll.ASB_EINVAL and err.message == message


def test_options_structs_own_their_strings():
    o = ll.asb_command_options()
    assert o.version == ll.ASB_COMMAND_OPTIONS_VERSION
    s = "".join(["/tm", "p"])
    o.cwd = s
    del s
    assert o.cwd == "/tmp"
    o.cwd = "/other"  # the old copy is freed, the new one kept
    assert o.cwd == "/other"
    o.envs = {"A": "1", "B": "two"}
    assert sorted(o.envs) == ["A=1", "B=two"]
    o.envs = ["C=3"]
    assert o.envs == ["C=3"]
    o.envs = None
    assert o.envs == []
    with pytest.raises(TypeError):
        o.envs = 5
    with pytest.raises(AttributeError):
        o.version = 7
    for _ in range(2000):  # no leak or double free when replaced many times
        o.user = "user"
        o.envs = {"K": "V" * 100}


def test_out_parameters(engine):
    rc, client = ll.asb_client_new(None)
    assert rc == 0
    rc, sb = ll.asb_sandbox_create(client, None)
    assert rc == 0
    try:
        rc, url = ll.asb_sandbox_get_url(sb, 3000)
        assert rc == 0 and url.startswith("http://3000-")
        assert ll.asb_files_write(sb, "/tmp/ll", b"\x00\x01", None)[0] == 0
        rc, data = ll.asb_files_read(sb, "/tmp/ll", None)
        assert (rc, data) == (0, b"\x00\x01")
        rc, res = ll.asb_commands_run(sb, "printf 'a\\0b'", None)
        assert ll.asb_command_result_stdout(res) == b"a\x00b"
        rc, entry = ll.asb_files_stat(sb, "/tmp/ll", None)
        secs, nanos = ll.asb_entry_modified_at(entry), ll.asb_entry_modified_nanos(entry)
        assert secs > 0 and 0 <= nanos < 10**9
    finally:
        ll.asb_sandbox_kill(sb, None)


def test_callback_exception_aborts_with_euser(sandbox):
    sb = sandbox.sync._h

    class Stop(Exception):
        pass

    calls = []

    def cb(chunk):
        calls.append(chunk)
        raise Stop("enough")

    cbs = ll.asbpy_callbacks(cb, None, None, None, None, None, 0)
    o = ll.asb_command_options()
    o.bind(cbs)
    rc, res = ll.asb_commands_run(sb, "echo 1; sleep 0.3; echo 2", o)
    assert rc == ll.ASB_EUSER and len(calls) == 1
    exc = cbs.take_error()
    assert isinstance(exc, Stop) and exc.__traceback__ is not None
    assert cbs.take_error() is None


def test_gil_released_around_blocking_calls(sandbox):
    """Another Python thread keeps running while a blocking call waits."""
    sb = sandbox.sync._h
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.monotonic()
    rc, res = ll.asb_commands_run(sb, "sleep 0.5", None)
    end = time.monotonic()
    stop.set()
    t.join()
    assert rc == 0
    during = [x for x in ticks if start < x < end]
    assert len(during) >= 2  # the ticker ran during the call


def test_callbacks_from_worker_thread_take_the_gil(sandbox):
    """Callbacks run on the calling (worker) thread while other threads hold
    and release the GIL."""
    sb = sandbox.sync._h
    seen = []
    cbs = ll.asbpy_callbacks(lambda b: seen.append((threading.get_ident(), b)), None, None,
                             None, None, None, 0)
    box = {}

    o = ll.asb_command_options()
    o.bind(cbs)

    def worker():
        box["tid"] = threading.get_ident()
        box["rc"] = ll.asb_commands_run(sb, "for i in 1 2 3; do echo $i; sleep 0.05; done",
                                        o)[0]

    t = threading.Thread(target=worker)
    t.start()
    spin = 0
    while t.is_alive():
        spin += sum(range(1000))  # this thread wants the GIL too
    t.join()
    assert box["rc"] == 0
    assert b"".join(b for _, b in seen) == b"1\n2\n3\n"
    assert {tid for tid, _ in seen} == {box["tid"]}


def test_command_options_v2_from_python(sandbox):
    """stdin_data (set_stdin_data copies the bytes) and kill_on_cancel are
    plain members of the version-2 options struct."""
    sb = sandbox.sync._h
    o = ll.asb_command_options()
    assert o.version == ll.ASB_COMMAND_OPTIONS_VERSION == 2
    o.set_stdin_data(b"from python")
    o.kill_on_cancel = 1
    rc, res = ll.asb_commands_run(sb, "cat", o)
    assert rc == 0 and ll.asb_command_result_stdout(res) == b"from python"
    assert not hasattr(o, "stdin_data")  # the raw pointer stays hidden
