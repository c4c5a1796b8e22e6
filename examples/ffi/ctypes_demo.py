#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""libagentsandbox from Python's ctypes: no SWIG, no binding, no header
(docs/ffi.md). Creates a sandbox, runs a command whose output streams to a
Python callback, writes a file and reads it back, shows a failing call's
error, kills the sandbox.

    /usr/bin/python3 ctypes_demo.py
    ASB_LIBRARY="$(pkg-config --variable=libdir agentsandbox)/libagentsandbox.so.1" \\
        /usr/bin/python3 ctypes_demo.py

Every function is looked up under its version node with dlvsym, and
options are made with asb_options_new and filled by member name, so no
struct layout is written down here. ctypes releases the GIL during each
call and takes it back for the callback, which runs on the calling thread.
"""
import ctypes
import os
import sys
from ctypes import POINTER, byref, c_char, c_char_p, c_int, c_longlong, c_size_t, c_uint, c_void_p

ASB_OK = 0
ASB_ECOMMANDEXIT = -8

lib = ctypes.CDLL(os.environ.get("ASB_LIBRARY") or "libagentsandbox.so.1")
libc = ctypes.CDLL(None)
libc.dlvsym.restype = c_void_p
libc.dlvsym.argtypes = [c_void_p, c_char_p, c_char_p]


def fn(name, restype, *argtypes):
    """The function `name` of node ASB_1.0, with its C prototype."""
    addr = libc.dlvsym(lib._handle, name.encode(), b"ASB_1.0")
    if not addr:
        sys.exit(f"{name}@ASB_1.0 not found")
    return ctypes.CFUNCTYPE(restype, *argtypes)(addr)


# The callback type asb_data_fn: a chunk (not NUL-terminated), its length,
# the userdata; non-zero aborts the call.
DATA_FN = ctypes.CFUNCTYPE(c_int, POINTER(c_char), c_size_t, c_void_p)

asb_version = fn("asb_version", c_char_p, c_void_p, c_void_p, c_void_p)
asb_error_message = fn("asb_error_message", c_char_p, c_void_p)
asb_status_name = fn("asb_status_name", c_char_p, c_int)
asb_options_new = fn("asb_options_new", c_int, POINTER(c_void_p), c_char_p, c_uint)
asb_options_free = fn("asb_options_free", None, c_void_p)
asb_options_set_int = fn("asb_options_set_int", c_int, c_void_p, c_char_p, c_longlong)
asb_options_set_string = fn("asb_options_set_string", c_int, c_void_p, c_char_p, c_char_p)
asb_options_add_string = fn("asb_options_add_string", c_int, c_void_p, c_char_p, c_char_p)
asb_options_set_pointer = fn("asb_options_set_pointer", c_int, c_void_p, c_char_p, c_void_p)
asb_client_new = fn("asb_client_new", c_int, POINTER(c_void_p), c_void_p)
asb_client_free = fn("asb_client_free", None, c_void_p)
asb_sandbox_create = fn("asb_sandbox_create", c_int, POINTER(c_void_p), c_void_p, c_void_p)
asb_sandbox_id = fn("asb_sandbox_id", c_char_p, c_void_p)
asb_sandbox_kill = fn("asb_sandbox_kill", c_int, c_void_p, c_void_p)
asb_sandbox_free = fn("asb_sandbox_free", None, c_void_p)
asb_commands_run = fn("asb_commands_run", c_int, POINTER(c_void_p), c_void_p, c_char_p, c_void_p)
asb_command_result_exit_code = fn("asb_command_result_exit_code", c_int, c_void_p)
asb_command_result_stdout = fn("asb_command_result_stdout", c_void_p, c_void_p, POINTER(c_size_t))
asb_command_result_free = fn("asb_command_result_free", None, c_void_p)
asb_files_write = fn("asb_files_write", c_int, c_void_p, c_void_p, c_char_p, c_char_p, c_size_t,
                     c_void_p)
asb_files_read = fn("asb_files_read", c_int, POINTER(c_void_p), POINTER(c_size_t), c_void_p,
                    c_char_p, c_void_p)
asb_free = fn("asb_free", None, c_void_p)


class AsbError(Exception):
    pass


def check(rc, what, ok=(ASB_OK,)):
    """Raise with the library's message (read on this thread, right away)."""
    if rc not in ok:
        raise AsbError(f"{what}: {asb_status_name(rc).decode()}: "
                       f"{asb_error_message(None).decode()}")
    return rc


class Options:
    """Heap options (asb_options_new): set members by name, free at the end."""

    def __init__(self, type_name):
        self.ptr = c_void_p()
        check(asb_options_new(byref(self.ptr), type_name.encode(), 1), type_name)

    def int(self, member, value):
        check(asb_options_set_int(self.ptr, member.encode(), value), member)
        return self

    def string(self, member, value):
        check(asb_options_set_string(self.ptr, member.encode(), value.encode()), member)
        return self

    def add(self, member, value):
        check(asb_options_add_string(self.ptr, member.encode(), value.encode()), member)
        return self

    def pointer(self, member, value):
        check(asb_options_set_pointer(self.ptr, member.encode(), ctypes.cast(value, c_void_p)),
              member)
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        asb_options_free(self.ptr)


def main():
    print("libagentsandbox", asb_version(None, None, None).decode())
    client, sandbox = c_void_p(), c_void_p()
    check(asb_client_new(byref(client), None), "client")
    with Options("asb_sandbox_options") as o:
        o.int("timeout_ms", 120000)
        check(asb_sandbox_create(byref(sandbox), client, o.ptr), "create")
    print("sandbox", asb_sandbox_id(sandbox).decode())

    chunks = []

    def on_stdout(data, length, userdata):
        chunks.append(ctypes.string_at(data, length))
        print("streamed:", ctypes.string_at(data, length).decode(), end="")
        return 0

    # The ctypes callback object must stay alive as long as the library may
    # call it: here, until asb_commands_run returns.
    callback = DATA_FN(on_stdout)
    result = c_void_p()
    with Options("asb_command_options") as o:
        o.add("envs", "WHO=ctypes").string("cwd", "/tmp").pointer("on_stdout", callback)
        check(asb_commands_run(byref(result), sandbox,
                               b"echo hello from $WHO; echo in $(pwd)", o.ptr), "run")
    length = c_size_t()
    out = ctypes.string_at(asb_command_result_stdout(result, byref(length)), length.value)
    print(f"exit code {asb_command_result_exit_code(result)}, "
          f"{sum(map(len, chunks))} bytes streamed, {len(out)} kept")
    asb_command_result_free(result)
    if b"".join(chunks) != out:
        raise AsbError("streamed output differs from the result's")

    # A failing command: ASB_ECOMMANDEXIT, and the result is still set.
    result = c_void_p()
    rc = check(asb_commands_run(byref(result), sandbox, b"exit 3", None), "exit 3",
               ok=(ASB_ECOMMANDEXIT,))
    print(f"exit 3: {asb_status_name(rc).decode()}, exit code "
          f"{asb_command_result_exit_code(result)} ({asb_error_message(None).decode()})")
    asb_command_result_free(result)

    text = b"written through ctypes\n\x00and binary-safe\n"
    check(asb_files_write(None, sandbox, b"/tmp/ffi/hello.txt", text, len(text), None), "write")
    data, length = c_void_p(), c_size_t()
    check(asb_files_read(byref(data), byref(length), sandbox, b"/tmp/ffi/hello.txt", None), "read")
    back = ctypes.string_at(data, length.value)
    asb_free(data)  # the library's buffer goes back to the library
    print("file round trip", "ok" if back == text else "FAILED")

    check(asb_sandbox_kill(sandbox, None), "kill")
    print("killed")
    asb_sandbox_free(sandbox)
    asb_client_free(client)
    return 0 if back == text else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AsbError as e:
        sys.exit(str(e))
