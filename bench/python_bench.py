#!/usr/bin/env python3
"""The Python binding's cost over the C library, measured in one run against
one real engine and one sandbox, C and Python calls interleaved round by
round so load drift hits both alike:

  - commands.run("true"): C (asb_commands_run through ctypes on the very
    libagentsandbox the extension loaded, same sandbox handle), the
    low-level SWIG module, the blocking API, the async API;
  - a 1 MiB file round trip (write + read), the same four ways;
  - the async API's fixed cost (awaiting a no-op on the worker pool);
  - many concurrent coroutines on one event loop running commands.run("true"),
    next to as many C calls from as many threads.

usage: python_bench.py [iterations]  (as root; ASB_ENGINE_BIN, PYTHONPATH or
       the build/py-venv interpreter to find agent_sandbox)
SPDX-License-Identifier: Apache-2.0
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINE = os.environ.get("ASB_ENGINE_BIN", str(REPO / "build" / "core" / "engine" / "agent-sandboxd"))


def start_engine():
    state = tempfile.mkdtemp(prefix="asb-pybench-")
    p = subprocess.Popen([ENGINE, "--state-dir", state, "--listen", "127.0.0.1:0",
                          "--cgroup-name", f"asbpybench-{os.getpid()}", "--pool", "2",
                          "--kill-on-exit"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    for line in p.stdout:
        if line.startswith("listening on"):
            break
    else:
        raise SystemExit("the engine did not start")
    for n in ("API_KEY", "API_URL", "DOMAIN", "SANDBOX_URL", "DEBUG"):
        os.environ.pop("ASB_" + n, None)
        os.environ.pop("E2B_" + n, None)
    os.environ["ASB_STATE_DIR"] = state
    return p, state


def stop_engine(p, state):
    p.send_signal(signal.SIGTERM)
    p.wait(60)
    shutil.rmtree(state, ignore_errors=True)


def loaded_library() -> str:
    for line in open("/proc/self/maps"):
        if "libagentsandbox.so" in line:
            return line.split()[-1]
    raise SystemExit("libagentsandbox is not loaded")


def c_api(path):
    lib = ctypes.CDLL(path)
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.asb_commands_run.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p, vp]
    lib.asb_command_result_free.argtypes = [vp]
    lib.asb_files_write.argtypes = [vp, vp, ctypes.c_char_p, ctypes.c_char_p, sz, vp]
    lib.asb_files_read.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(sz), vp,
                                   ctypes.c_char_p, vp]
    lib.asb_free.argtypes = [vp]
    return lib


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def report(name, samples):
    base = statistics.median(samples["C"])
    print(f"\n{name}")
    print(f"  {'':26s} {'p50 us':>10s} {'p90 us':>10s} {'mean us':>10s} {'x C (p50)':>10s}")
    for k, xs in samples.items():
        p50 = statistics.median(xs)
        print(f"  {k:26s} {p50 * 1e6:10.1f} {pct(xs, 90) * 1e6:10.1f} "
              f"{statistics.fmean(xs) * 1e6:10.1f} {p50 / base:10.3f}")


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = 10
    per = max(1, iters // rounds)
    proc, state = start_engine()
    try:
        from agent_sandbox import Sandbox, lowlevel as ll
        from agent_sandbox import _native as N

        sb = Sandbox.create_sync(timeout=1800)
        try:
            run_bench(sb, ll, N, per, rounds)
        finally:
            sb.kill_sync()
    finally:
        stop_engine(proc, state)


def run_bench(sb, ll, N, per, rounds):
    lib = c_api(loaded_library())
    handle = ctypes.c_void_p(int(sb.sync._h.this))
    print(f"python_bench: {per * rounds} iterations per variant, {rounds} interleaved rounds; "
          f"engine {ENGINE}; library {loaded_library()}")

    # ---- commands.run("true") --------------------------------------------------------
    def c_run():
        out = ctypes.c_void_p()
        t = time.perf_counter()
        rc = lib.asb_commands_run(ctypes.byref(out), handle, b"true", None)
        dt = time.perf_counter() - t
        lib.asb_command_result_free(out)
        assert rc == 0
        return dt

    def ll_run():
        t = time.perf_counter()
        rc, res = ll.asb_commands_run(sb.sync._h, "true", None)
        dt = time.perf_counter() - t
        assert rc == 0
        return dt

    def sync_run():
        t = time.perf_counter()
        sb.sync.commands.run("true")
        return time.perf_counter() - t

    async def async_run():
        t = time.perf_counter()
        await sb.commands.run("true")
        return time.perf_counter() - t

    data = os.urandom(1 << 20)

    def c_file():
        buf, n = ctypes.c_char_p(), ctypes.c_size_t()
        t = time.perf_counter()
        rc = lib.asb_files_write(None, handle, b"/tmp/bench.bin", data, len(data), None)
        rc2 = lib.asb_files_read(ctypes.byref(buf), ctypes.byref(n), handle, b"/tmp/bench.bin",
                                 None)
        dt = time.perf_counter() - t
        assert rc == 0 and rc2 == 0 and n.value == len(data)
        lib.asb_free(buf)
        return dt

    def ll_file():
        t = time.perf_counter()
        ll.asb_files_write(sb.sync._h, "/tmp/bench.bin", data, None)
        rc, back = ll.asb_files_read(sb.sync._h, "/tmp/bench.bin", None)
        dt = time.perf_counter() - t
        assert len(back) == len(data)
        return dt

    def sync_file():
        t = time.perf_counter()
        sb.sync.files.write("/tmp/bench.bin", data)
        back = sb.sync.files.read("/tmp/bench.bin", format="bytes")
        dt = time.perf_counter() - t
        assert len(back) == len(data)
        return dt

    async def async_file():
        t = time.perf_counter()
        await sb.files.write("/tmp/bench.bin", data)
        back = await sb.files.read("/tmp/bench.bin", format="bytes")
        dt = time.perf_counter() - t
        assert len(back) == len(data)
        return dt

    async def interleave(variants):
        samples = {k: [] for k in variants}
        for k, fn in variants.items():  # warm up
            r = fn()
            if asyncio.iscoroutine(r):
                await r
        for _ in range(rounds):
            for k, fn in variants.items():
                for _ in range(per):
                    r = fn()
                    samples[k].append(await r if asyncio.iscoroutine(r) else r)
        return samples

    async def all_benches():
        report('commands.run("true") round trip',
               await interleave({"C": c_run, "lowlevel (SWIG)": ll_run, "Python, blocking": sync_run,
                                 "Python, async": async_run}))
        report("1 MiB file write + read",
               await interleave({"C": c_file, "lowlevel (SWIG)": ll_file,
                                 "Python, blocking": sync_file, "Python, async": async_file}))

        # fixed cost of the async API: a no-op on the worker pool
        xs = []
        for _ in range(2000):
            t = time.perf_counter()
            await N.run(lambda: None)
            xs.append(time.perf_counter() - t)
        print(f"\nasync API fixed cost (await a no-op on the worker pool): "
              f"p50 {statistics.median(xs) * 1e6:.1f} us, p90 {pct(xs, 90) * 1e6:.1f} us")

        # many coroutines on one loop vs as many C threads
        print('\nconcurrent commands.run("true"): one event loop vs C calls on threads')
        print(f"  {'concurrency':>12s} {'async ops/s':>12s} {'C threads ops/s':>16s} {'ratio':>8s}")
        for conc in (1, 10, 50, 200):
            total = max(conc * 2, 100)

            async def worker(k):
                for _ in range(k):
                    await sb.commands.run("true")

            t = time.perf_counter()
            await asyncio.gather(*(worker(total // conc) for _ in range(conc)))
            a_rate = (total // conc * conc) / (time.perf_counter() - t)

            def cworker(k):
                for _ in range(k):
                    c_run()

            ths = [threading.Thread(target=cworker, args=(total // conc,)) for _ in range(conc)]
            t = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            c_rate = (total // conc * conc) / (time.perf_counter() - t)
            print(f"  {conc:12d} {a_rate:12.0f} {c_rate:16.0f} {a_rate / c_rate:8.2f}")

    asyncio.run(all_benches())


if __name__ == "__main__":
    main()
