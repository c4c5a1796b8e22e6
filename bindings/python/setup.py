"""Build of agent_sandbox: the pure-Python package plus the SWIG extension
agent_sandbox._lowlevel (module agent_sandbox.lowlevel) over libagentsandbox.

Offline, with Debian's tools only (no PyPI):

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./bindings/python

Where the C library comes from, first match wins:
  1. $ASB_INCLUDE_DIR / $ASB_LIB_DIR (headers / the dir holding libagentsandbox.so);
  2. $ASB_BUILD_DIR: a CMake build tree of this repo (its core/client);
  3. pkg-config agentsandbox (an installed library);
  4. the repo's build/ next to bindings/ (when building from a checkout).
A library found outside the linker's default paths is recorded as the
extension's RPATH, so nothing needs LD_LIBRARY_PATH.

The SWIG interface is bindings/agentsandbox.i (shared with the other
bindings, with the lists generated from abi/api.json in bindings/gen/) with
bindings/python/asb_python*.i; an sdist carries copies of them and of the
public headers under swig/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent  # a checkout: bindings/python/ -> repo root
SWIG_COPY = HERE / "swig"  # an sdist's copies


def _interface_dirs() -> "tuple[Path, Path]":
    """(dir holding agentsandbox.i, dir holding agentsandbox.h for SWIG)."""
    if (REPO / "bindings" / "agentsandbox.i").exists() and (REPO / "include").exists():
        return REPO / "bindings", REPO / "include"
    if (SWIG_COPY / "agentsandbox.i").exists():
        return SWIG_COPY, SWIG_COPY / "include"
    sys.exit("agent_sandbox: cannot find the SWIG interface (bindings/agentsandbox.i)")


def _pkg_config(*args: str) -> "list[str] | None":
    try:
        out = subprocess.run(["pkg-config", *args, "agentsandbox"], check=True,
                             capture_output=True, text=True).stdout
        return out.split()
    except (OSError, subprocess.CalledProcessError):
        return None


def _library() -> "tuple[list[str], list[str], list[str]]":
    """(include dirs, library dirs, rpath dirs) for libagentsandbox."""
    inc, lib = os.environ.get("ASB_INCLUDE_DIR"), os.environ.get("ASB_LIB_DIR")
    if lib:
        return [inc or str(_interface_dirs()[1])], [lib], [lib]
    build = os.environ.get("ASB_BUILD_DIR")
    candidates = [Path(build)] if build else []
    libs = _pkg_config("--libs-only-L")
    if not build and libs is not None:
        cflags = _pkg_config("--cflags-only-I") or []
        incs = [f[2:] for f in cflags if f.startswith("-I")]
        ldirs = [f[2:] for f in libs if f.startswith("-L")]
        system = {"/usr/lib", "/usr/lib64", "/lib", "/usr/lib/x86_64-linux-gnu"}
        return incs, ldirs, [d for d in ldirs if d not in system]
    candidates.append(REPO / "build")
    for b in candidates:
        d = b / "core" / "client"
        if (d / "libagentsandbox.so").exists():
            return [str(_interface_dirs()[1])], [str(d)], [str(d)]
    sys.exit("agent_sandbox: libagentsandbox not found: build the repo (cmake --build build), "
             "install it (pkg-config agentsandbox), or set ASB_BUILD_DIR / ASB_LIB_DIR")


class BuildExt(build_ext):
    """Generates the wrapper with SWIG into the build dir, compiles it, and
    puts the generated lowlevel.py next to the package's modules."""

    def build_extensions(self) -> None:
        swig = shutil.which(os.environ.get("SWIG", "swig4.0")) or shutil.which("swig")
        if not swig:
            sys.exit("agent_sandbox: SWIG 4 is needed (apt-get install swig)")
        idir, hdir = _interface_dirs()
        gen = Path(self.build_temp) / "swig"
        gen.mkdir(parents=True, exist_ok=True)
        wrap = gen / "lowlevel_wrap.c"
        subprocess.run([swig, "-python", "-threads", f"-I{idir}", f"-I{hdir}",
                        "-module", "lowlevel", "-outdir", str(gen), "-o", str(wrap),
                        str(idir / "agentsandbox.i")], check=True)
        ext = self.extensions[0]
        ext.sources = [str(wrap)]
        super().build_extensions()
        pkg = Path(self.get_ext_fullpath(ext.name)).parent
        shutil.copyfile(gen / "lowlevel.py", pkg / "lowlevel.py")


class SDist(sdist):
    """Carries the shared SWIG interface and the public headers."""

    def make_release_tree(self, base_dir: str, files: "list[str]") -> None:
        super().make_release_tree(base_dir, files)
        idir, hdir = _interface_dirs()
        dest = Path(base_dir) / "swig"
        (dest / "python").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(idir / "agentsandbox.i", dest / "agentsandbox.i")
        for f in ("asb_python.i", "asb_python_shims.i"):
            shutil.copyfile(idir / "python" / f, dest / "python" / f)
        (dest / "gen").mkdir(exist_ok=True)
        shutil.copyfile(idir / "gen" / "asb_api.i", dest / "gen" / "asb_api.i")
        if (dest / "include").exists():
            shutil.rmtree(dest / "include")
        shutil.copytree(hdir, dest / "include",
                        ignore=shutil.ignore_patterns("*.in", "*.txt"))


incs, ldirs, rpath = _library()
setup(
    ext_modules=[
        Extension(
            "agent_sandbox._lowlevel",
            sources=["agent_sandbox/lowlevel_wrap.c"],  # replaced by BuildExt
            include_dirs=incs,
            library_dirs=ldirs,
            runtime_library_dirs=rpath,
            libraries=["agentsandbox"],
            extra_compile_args=["-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ],
    cmdclass={"build_ext": BuildExt, "sdist": SDist},
)
