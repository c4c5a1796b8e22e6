"""``e2b.template.main``: E2B's fluent template builder (``TemplateBase``,
``TemplateBuilder``, ``TemplateFinal``) over agent-sandbox.

A template is recorded as E2B's builder steps (RUN, COPY, ENV, WORKDIR,
USER, start and ready commands), which ``Template.build`` builds in E2B's
steps (``template_sync.main``), each a call of the C library: ask for the
build, hash and upload the files of COPY steps from the file context
directory, start the build and follow its log. docs/templates.md, "E2B's Template builder", says how each
step is built here.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, List, Optional, Union

from ...exceptions import BuildException, InvalidArgumentException
from .readycmd import ReadyCmd, wait_for_file
from .types import CopyItem, Instruction, InstructionType, TemplateType
from .utils import get_caller_directory, get_caller_frame, make_traceback, pad_octal
from .utils import validate_relative_path

__all__ = ["TemplateBase", "TemplateBuilder", "TemplateFinal", "TemplateClass"]

# E2B's default base image: its own Debian base with E2B's tools, which is
# what our ``base`` template is. Building from it builds on ``base``.
DEFAULT_BASE_IMAGE = "e2bdev/base"


def _paths(p: Any) -> List[str]:
    return [str(p)] if isinstance(p, (str, Path)) else [str(x) for x in p]


class TemplateBuilder:
    """The steps of a template after its base (each method returns the
    builder, so calls chain)."""

    def __init__(self, template: "TemplateBase"):
        self._template = template

    def _step(self, type_: InstructionType, args: List[str], **extra: Any) -> "TemplateBuilder":
        t = self._template
        step: Instruction = {"type": type_, "args": args, "force": bool(t._force_next_layer)}
        step.update(extra)
        t._instructions.append(step)
        t._collect_stack_trace()
        return self

    # ---- files ----------------------------------------------------------------

    def copy(self, src: Union[str, Path, List[Union[str, Path]]], dest: Union[str, Path],
             force_upload: Optional[bool] = None, user: Optional[str] = None,
             mode: Optional[int] = None, resolve_symlinks: Optional[bool] = None,
             gzip: Optional[bool] = None) -> "TemplateBuilder":
        """Copy files of the file context directory (paths or globs,
        relative to it) to ``dest`` in the template, owned by ``user``
        (default: the current one) with ``mode`` (e.g. ``0o755``)."""
        tb = make_traceback(get_caller_frame())
        for s in _paths(src):
            norm = validate_relative_path(s, tb)
            self._step(InstructionType.COPY, [norm, str(dest), user or "",
                                              pad_octal(mode) if mode else ""],
                       forceUpload=force_upload, resolveSymlinks=resolve_symlinks, gzip=gzip)
            if force_upload:
                self._template._instructions[-1]["force"] = True
        return self

    def copy_items(self, items: List[CopyItem]) -> "TemplateBuilder":
        """``copy`` for each ``{src, dest, forceUpload?, user?, mode?,
        resolveSymlinks?}``."""
        for it in items:
            self.copy(it["src"], it["dest"], it.get("forceUpload"), it.get("user"),
                      it.get("mode"), it.get("resolveSymlinks"), it.get("gzip"))
        return self

    def remove(self, path: Union[str, Path, List[Union[str, Path]]], force: bool = False,
               recursive: bool = False, user: Optional[str] = None) -> "TemplateBuilder":
        """``rm`` in the template."""
        opts = (["-r"] if recursive else []) + (["-f"] if force else [])
        return self.run_cmd(" ".join(["rm", *opts, *map(shlex.quote, _paths(path))]), user=user)

    def rename(self, src: Union[str, Path], dest: Union[str, Path], force: bool = False,
               user: Optional[str] = None) -> "TemplateBuilder":
        """``mv`` in the template."""
        cmd = f"mv {shlex.quote(str(src))} {shlex.quote(str(dest))}" + (" -f" if force else "")
        return self.run_cmd(cmd, user=user)

    def make_dir(self, path: Union[str, Path, List[Union[str, Path]]],
                 mode: Optional[int] = None, user: Optional[str] = None) -> "TemplateBuilder":
        """``mkdir -p`` in the template."""
        opts = [f"-m {pad_octal(mode)}"] if mode else []
        return self.run_cmd(" ".join(["mkdir", "-p", *opts, *map(shlex.quote, _paths(path))]),
                            user=user)

    def make_symlink(self, src: Union[str, Path], dest: Union[str, Path],
                     user: Optional[str] = None, force: bool = False) -> "TemplateBuilder":
        """``ln -s src dest`` in the template."""
        parts = ["ln", "-s"] + (["-f"] if force else []) + [shlex.quote(str(src)),
                                                              shlex.quote(str(dest))]
        return self.run_cmd(" ".join(parts), user=user)

    # ---- commands -------------------------------------------------------------

    def run_cmd(self, command: Union[str, List[str]],
                user: Optional[str] = None) -> "TemplateBuilder":
        """Run a shell command (a list runs joined with ``&&``) as ``user``
        (default: the current one) in the current workdir."""
        cmds = [command] if isinstance(command, str) else list(command)
        args = [" && ".join(cmds)] + ([user] if user else [])
        return self._step(InstructionType.RUN, args)

    def pip_install(self, packages: Optional[Union[str, List[str]]] = None,
                    g: bool = True) -> "TemplateBuilder":
        """``pip install`` (as root unless ``g=False``: ``--user``)."""
        pk = [packages] if isinstance(packages, str) else list(packages or ["."])
        return self.run_cmd(" ".join(["pip", "install", *([] if g else ["--user"]), *pk]),
                            user="root" if g else None)

    def npm_install(self, packages: Optional[Union[str, List[str]]] = None,
                    g: Optional[bool] = False, dev: Optional[bool] = False) -> "TemplateBuilder":
        """``npm install`` (``-g`` as root)."""
        pk = [packages] if isinstance(packages, str) else list(packages or [])
        opts = (["-g"] if g else []) + (["--save-dev"] if dev else [])
        return self.run_cmd(" ".join(["npm", "install", *opts, *pk]), user="root" if g else None)

    def bun_install(self, packages: Optional[Union[str, List[str]]] = None,
                    g: Optional[bool] = False, dev: Optional[bool] = False) -> "TemplateBuilder":
        """``bun install`` (``-g`` as root)."""
        pk = [packages] if isinstance(packages, str) else list(packages or [])
        opts = (["-g"] if g else []) + (["--dev"] if dev else [])
        return self.run_cmd(" ".join(["bun", "install", *opts, *pk]), user="root" if g else None)

    def apt_install(self, packages: Union[str, List[str]], no_install_recommends: bool = False,
                    fix_missing: bool = False) -> "TemplateBuilder":
        """``apt-get update && apt-get install -y`` as root."""
        pk = [packages] if isinstance(packages, str) else list(packages)
        opts = (["--no-install-recommends"] if no_install_recommends else []) + \
            (["--fix-missing"] if fix_missing else [])
        install = " ".join(["DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get",
                            "install", "-y", *opts, *pk])
        return self.run_cmd(["apt-get update", install], user="root")

    def git_clone(self, url: str, path: Optional[Union[str, Path]] = None,
                  branch: Optional[str] = None, depth: Optional[int] = None,
                  user: Optional[str] = None) -> "TemplateBuilder":
        """``git clone`` (``branch``: that branch only; ``depth``: shallow)."""
        parts = ["git", "clone", shlex.quote(url)]
        if branch:
            parts += [f"--branch {shlex.quote(branch)}", "--single-branch"]
        if depth:
            parts.append(f"--depth {int(depth)}")
        if path:
            parts.append(shlex.quote(str(path)))
        return self.run_cmd(" ".join(parts), user=user)

    def add_mcp_server(self, servers: Union[str, List[str]]) -> "TemplateBuilder":
        """E2B's mcp-gateway template only."""
        if self._template._base_template != "mcp-gateway":
            raise BuildException("MCP servers can only be added to mcp-gateway template")
        sv = [servers] if isinstance(servers, str) else list(servers)
        return self.run_cmd("mcp-gateway pull " + " ".join(sv), user="root")

    def beta_dev_container_prebuild(self, devcontainer_directory: Union[str, Path]
                                    ) -> "TemplateBuilder":
        """E2B's devcontainer template only."""
        if self._template._base_template != "devcontainer":
            raise BuildException("Devcontainers can only used in the devcontainer template")
        return self.run_cmd("devcontainer build --workspace-folder "
                            + shlex.quote(str(devcontainer_directory)), user="root")

    def beta_set_dev_container_start(self, devcontainer_directory: Union[str, Path]
                                     ) -> "TemplateFinal":
        """E2B's devcontainer template only."""
        if self._template._base_template != "devcontainer":
            raise BuildException("Devcontainers can only used in the devcontainer template")
        d = shlex.quote(str(devcontainer_directory))
        return self.set_start_cmd(
            f"sudo devcontainer up --workspace-folder {d} && sudo /prepare-exec.sh {d} | "
            "sudo tee /devcontainer.sh > /dev/null && sudo chmod +x /devcontainer.sh && "
            "sudo touch /devcontainer.up", wait_for_file("/devcontainer.up"))

    # ---- settings -------------------------------------------------------------

    def set_workdir(self, workdir: Union[str, Path]) -> "TemplateBuilder":
        """The directory later steps and the start command run in."""
        return self._step(InstructionType.WORKDIR, [str(workdir)])

    def set_user(self, user: str) -> "TemplateBuilder":
        """The user later steps and the start command run as."""
        return self._step(InstructionType.USER, [user])

    def set_envs(self, envs: Dict[str, str]) -> "TemplateBuilder":
        """Environment variables of later steps, the start command and the
        sandboxes' commands."""
        if not envs:
            return self
        return self._step(InstructionType.ENV, [x for k, v in envs.items() for x in (k, v)])

    def skip_cache(self) -> "TemplateBuilder":
        """Rebuild the steps from here on even when cached."""
        self._template._force_next_layer = True
        return self

    def set_start_cmd(self, start_cmd: str, ready_cmd: Union[str, ReadyCmd]) -> "TemplateFinal":
        """The command sandboxes of the template start with, and the check
        that says they are ready."""
        self._template._start_cmd = start_cmd
        self._template._ready_cmd = ready_cmd.get_cmd() if isinstance(ready_cmd,
                                                                      ReadyCmd) else ready_cmd
        self._template._collect_stack_trace()
        return TemplateFinal(self._template)

    def set_ready_cmd(self, ready_cmd: Union[str, ReadyCmd]) -> "TemplateFinal":
        """The ready check alone."""
        self._template._ready_cmd = ready_cmd.get_cmd() if isinstance(ready_cmd,
                                                                      ReadyCmd) else ready_cmd
        self._template._collect_stack_trace()
        return TemplateFinal(self._template)


class TemplateFinal:
    """A template with its start/ready command set: it can only be built."""

    def __init__(self, template: "TemplateBase"):
        self._template = template


class TemplateBase:
    """``Template(file_context_path=..., file_ignore_patterns=...)``: the
    start of a template; pick its base with a ``from_*`` method."""

    _logs_refresh_frequency = 0.2

    def __init__(self, file_context_path: Optional[Union[str, Path]] = None,
                 file_ignore_patterns: Optional[List[str]] = None):
        self._default_base_image = DEFAULT_BASE_IMAGE
        self._base_image: Optional[str] = DEFAULT_BASE_IMAGE
        self._base_template: Optional[str] = None
        self._registry_config: Optional[Dict[str, Any]] = None
        self._start_cmd: Optional[str] = None
        self._ready_cmd: Optional[str] = None
        self._force = False
        self._force_next_layer = False
        self._instructions: List[Instruction] = []
        ctx = file_context_path
        self._file_context_path = (Path(ctx).as_posix() if ctx is not None
                                   else get_caller_directory() or ".")
        self._file_ignore_patterns: List[str] = list(file_ignore_patterns or [])
        self._stack_traces: List[Optional[TracebackType]] = []

    def skip_cache(self) -> "TemplateBase":
        """Rebuild everything from the next step on (here: the whole build)."""
        self._force_next_layer = True
        return self

    def _collect_stack_trace(self) -> "TemplateBase":
        self._stack_traces.append(make_traceback(get_caller_frame()))
        return self

    def _from(self, image: Optional[str], template: Optional[str]) -> TemplateBuilder:
        self._base_image, self._base_template = image, template
        if self._force_next_layer:
            self._force = True
        self._collect_stack_trace()
        return TemplateBuilder(self)

    # ---- bases ------------------------------------------------------------------

    def from_image(self, image: str, username: Optional[str] = None,
                   password: Optional[str] = None) -> TemplateBuilder:
        """A container image as the base. This engine pulls from no
        registry: name a local image, ``oci:/dir[:name]`` or
        ``docker-archive:/file.tar[:repo:tag]`` (docs/templates.md)."""
        if username is not None or password is not None:
            if not username or not password:
                raise InvalidArgumentException(
                    "Both username and password are required when providing registry "
                    "credentials")
            self._registry_config = {"type": "registry", "username": username,
                                     "password": password}
        return self._from(image, None)

    def from_template(self, template: str) -> TemplateBuilder:
        """Another template as the base (``base``, ``code-interpreter-v1``,
        one built before, ...)."""
        return self._from(None, template)

    def from_base_image(self) -> TemplateBuilder:
        """E2B's default base image, which here is the ``base`` template."""
        return self.from_image(self._default_base_image)

    def from_debian_image(self, variant: str = "stable") -> TemplateBuilder:
        return self.from_image(f"debian:{variant}")

    def from_ubuntu_image(self, variant: str = "latest") -> TemplateBuilder:
        return self.from_image(f"ubuntu:{variant}")

    def from_fedora_image(self, variant: str = "44") -> TemplateBuilder:
        return self.from_image(f"fedora:{variant}")

    def from_alpine_image(self, variant: str = "3.24") -> TemplateBuilder:
        return self.from_image(f"alpine:{variant}")

    def from_arch_image(self, variant: str = "latest") -> TemplateBuilder:
        return self.from_image(f"archlinux:{variant}")

    def from_python_image(self, version: str = "3") -> TemplateBuilder:
        return self.from_image(f"python:{version}")

    def from_node_image(self, variant: str = "lts") -> TemplateBuilder:
        return self.from_image(f"node:{variant}")

    def from_bun_image(self, variant: str = "latest") -> TemplateBuilder:
        return self.from_image(f"oven/bun:{variant}")

    def from_aws_registry(self, image: str, access_key_id: str, secret_access_key: str,
                          region: str) -> TemplateBuilder:
        """Recorded as E2B does; the engine refuses registry images."""
        self._registry_config = {"type": "aws", "awsAccessKeyId": access_key_id,
                                 "awsSecretAccessKey": secret_access_key, "awsRegion": region}
        return self._from(image, None)

    def from_gcp_registry(self, image: str, service_account_json: Union[str, dict]
                          ) -> TemplateBuilder:
        """Recorded as E2B does; the engine refuses registry images."""
        sa = service_account_json
        if isinstance(sa, str) and not sa.lstrip().startswith("{"):
            with open(os.path.join(self._file_context_path, sa)) as f:
                sa = f.read()
        self._registry_config = {"type": "gcp", "serviceAccountJson":
                                 sa if isinstance(sa, str) else json.dumps(sa)}
        return self._from(image, None)

    def from_dockerfile(self, dockerfile_content_or_path: str) -> TemplateBuilder:
        """A Dockerfile (its text or path) read into steps: its ``FROM`` is
        the base (``FROM e2bdev/base`` is the ``base`` template; registry
        images are refused when built), then its RUN, COPY, ENV, WORKDIR,
        USER and CMD as builder steps."""
        from .dockerfile_parser import parse_dockerfile

        builder = TemplateBuilder(self)
        image = parse_dockerfile(dockerfile_content_or_path, builder)
        self._base_image, self._base_template = image, None
        if self._force_next_layer:
            self._force = True
        self._collect_stack_trace()
        return builder

    # ---- output -----------------------------------------------------------------

    @staticmethod
    def to_json(template: "TemplateClass") -> str:
        """The template as E2B's builder JSON (without the files' hashes,
        which the library computes when it builds)."""
        return json.dumps(template._template._serialize(), indent=2)

    @staticmethod
    def to_dockerfile(template: "TemplateClass") -> str:
        """The template as a Dockerfile (image bases only)."""
        t = template._template
        if t._base_template is not None:
            raise ValueError("Cannot convert template built from another template to "
                             "Dockerfile. Templates based on other templates can only be "
                             "built using the E2B API.")
        if t._base_image is None:
            raise ValueError("No base image specified for template")
        lines = [f"FROM {t._base_image}"]
        for st in t._instructions:
            ty, a = InstructionType(st["type"]), st["args"]
            if ty is InstructionType.RUN:
                lines.append(f"RUN {a[0]}")
            elif ty is InstructionType.COPY:
                lines.append(f"COPY {a[0]} {a[1]}")
            elif ty is InstructionType.ENV:
                lines.append("ENV " + " ".join(f"{a[i]}={a[i + 1]}"
                                               for i in range(0, len(a), 2)))
            else:
                lines.append(f"{ty.value} {' '.join(a)}")
        if t._start_cmd:
            lines.append(f"ENTRYPOINT {t._start_cmd}")
        return "\n".join(lines) + "\n"

    def _serialize(self, for_build: bool = False) -> TemplateType:
        steps = []
        for st in self._instructions:
            out: Dict[str, Any] = {"type": InstructionType(st["type"]).value,
                                   "args": list(st["args"]), "force": bool(st.get("force"))}
            if st.get("forceUpload") is not None:
                out["forceUpload"] = st["forceUpload"]
            if for_build and out["type"] == "COPY":
                # the library's fifth COPY argument: E2B's resolveSymlinks
                while len(out["args"]) < 4:
                    out["args"].append("")
                out["args"].append("true" if st.get("resolveSymlinks") else "false")
            steps.append(out)
        data: TemplateType = {"steps": steps, "force": self._force}
        image, base = self._base_image, self._base_template
        if for_build and image == DEFAULT_BASE_IMAGE and base is None:
            image, base = None, "base"
        if image is not None:
            data["fromImage"] = image
        if base is not None:
            data["fromTemplate"] = base
        if self._registry_config is not None:
            data["fromImageRegistry"] = self._registry_config
        if self._start_cmd is not None:
            data["startCmd"] = self._start_cmd
        if self._ready_cmd is not None:
            data["readyCmd"] = self._ready_cmd
        return data


TemplateClass = Union[TemplateFinal, TemplateBuilder]
