"""``e2b.template.dockerfile_parser``: ``Template().from_dockerfile(...)``
reads a Dockerfile into builder steps, as E2B's SDK does: one ``FROM``
(its image is the base), ``RUN``, ``COPY``/``ADD`` (``--chown=``),
``WORKDIR``, ``USER``, ``ENV``/``ARG``, ``CMD``/``ENTRYPOINT`` (the start
command, ready after 20 s); steps run as root in ``/`` until the file says
otherwise, then the template defaults to ``user`` in ``/home/user``.

Hand-written because Debian packages no Dockerfile reader for Python (E2B
uses PyPI's dockerfile-parse); it needs only line continuations, comments
and the instruction word.
SPDX-License-Identifier: Apache-2.0"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any, Dict, List, Tuple

__all__ = ["parse_dockerfile"]


def _instructions(text: str) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    cur = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if cur and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    if cur.strip():
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _words(value: str) -> List[str]:
    try:
        v = json.loads(value)
        if isinstance(v, list):
            return [str(x) for x in v]
    except ValueError:
        pass
    return shlex.split(value)


def _envs(value: str, arg: bool) -> Dict[str, str]:
    if "=" in value.split(None, 1)[0]:
        return {k: v for k, _, v in (w.partition("=") for w in shlex.split(value))}
    parts = value.split(None, 1)
    if len(parts) == 2:
        return {parts[0]: parts[1].strip("\"'")}
    return {parts[0]: ""} if arg and parts else {}


def parse_dockerfile(dockerfile_content_or_path: str, builder: Any) -> str:
    """Adds the Dockerfile's steps to ``builder``; returns its base image."""
    text = dockerfile_content_or_path
    if os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    ins = _instructions(text)
    froms = [v for k, v in ins if k == "FROM"]
    if len(froms) > 1:
        raise ValueError("Multi-stage Dockerfiles are not supported")
    if not froms:
        raise ValueError("Dockerfile must contain a FROM instruction")
    base = re.split(r"\s+as\s+", froms[0], flags=re.I)[0].strip()
    user_set = workdir_set = False
    builder.set_user("root")
    builder.set_workdir("/")
    for word, value in ins:
        if not value or word == "FROM":
            continue
        if word == "RUN":
            builder.run_cmd(value)
        elif word in ("COPY", "ADD"):
            parts = _words(value)
            owner = next((p[len("--chown="):] for p in parts if p.startswith("--chown=")), None)
            paths = [p for p in parts if not p.startswith("--")]
            for src in paths[:-1]:
                builder.copy(src, paths[-1], user=owner)
        elif word == "WORKDIR":
            builder.set_workdir(value)
            workdir_set = True
        elif word == "USER":
            builder.set_user(value)
            user_set = True
        elif word in ("ENV", "ARG"):
            envs = _envs(value, word == "ARG")
            if envs:
                builder.set_envs(envs)
        elif word in ("CMD", "ENTRYPOINT"):
            try:
                v = json.loads(value)
                cmd = " ".join(str(x) for x in v) if isinstance(v, list) else value
            except ValueError:
                cmd = value
            builder.set_start_cmd(cmd, "sleep 20")
    if not user_set:
        builder.set_user("user")
    if not workdir_set:
        builder.set_workdir("/home/user")
    return base
