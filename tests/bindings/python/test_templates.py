"""Templates (asb_templates_*) from Python: build from a template.yaml,
cache, get, list, create a sandbox from it, delete; and the errors.
SPDX-License-Identifier: Apache-2.0"""

import asyncio

import pytest

from agent_sandbox import (
    BuildException,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    SandboxException,
    templates,
)


def _dir(tmp_path, yaml, **files):
    (tmp_path / "template.yaml").write_text(yaml)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_build_get_list_use_delete(engine, tmp_path):
    d = _dir(tmp_path, "name: py-tmpl\ndescription: made from Python\nsteps:\n"
                       "  - copy: {src: greeting.txt, dest: /srv/greeting.txt}\n"
                       "  - run: echo built > /srv/step\n", **{"greeting.txt": "hello\n"})
    info = templates.build_sync(d)
    try:
        assert info.name == "py-tmpl" and len(info.template_id) == 20
        assert info.cached is False and info.build_id
        assert info.description == "made from Python"
        assert info.created_at is not None and info.created_at.year >= 2024
        assert "greeting.txt" in (info.build_log or "")
        assert info.raw.get("templateID") == info.template_id

        again = asyncio.run(templates.build(d))
        assert again.cached is True and again.build_id == info.build_id
        forced = templates.build_sync(d, force=True)
        assert forced.cached is False

        by_name = templates.get_sync("py-tmpl")
        by_id = asyncio.run(templates.get(info.template_id))
        assert by_name.template_id == by_id.template_id == info.template_id
        assert by_name.cached is None and by_name.build_log is None

        listed = {t.name: t for t in asyncio.run(templates.list_all())}
        assert "py-tmpl" in listed and "base" in listed
        assert listed["py-tmpl"].template_id == info.template_id

        sb = Sandbox.create_sync("py-tmpl", timeout=120)
        try:
            out = sb.commands.run_sync("cat /srv/greeting.txt /srv/step").stdout
            assert out == "hello\nbuilt\n"
            # A template in use is not deleted.
            with pytest.raises(SandboxException):
                templates.delete_sync("py-tmpl")
        finally:
            sb.kill_sync()
    finally:
        templates.delete_sync("py-tmpl")
    with pytest.raises(NotFoundException):
        templates.get_sync("py-tmpl")
    with pytest.raises(NotFoundException):
        asyncio.run(templates.delete("py-tmpl"))


def test_errors(engine, tmp_path):
    with pytest.raises(InvalidArgumentException, match="has no template.yaml"):
        templates.build_sync(tmp_path)
    with pytest.raises(InvalidArgumentException, match=r"template\.yaml:1:7: name:"):
        templates.build_sync(_dir(tmp_path, "name: Bad-Name\n"))
    with pytest.raises(BuildException, match="exit code 3"):
        templates.build_sync(_dir(tmp_path, "name: py-broken\nsteps:\n  - run: exit 3\n"))
    with pytest.raises(NotFoundException):
        templates.get_sync("no-such-template")
    with pytest.raises(InvalidArgumentException):
        templates.delete_sync("base")
