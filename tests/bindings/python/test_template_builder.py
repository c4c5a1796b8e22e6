"""E2B's Template builder from Python, on the C library's
asb_templates_build_steps: agent_sandbox.compat's Template / AsyncTemplate
(E2B's names and semantics) and agent_sandbox.templates.build_steps, against
a real engine: copy from a file context (globs, symlinks), run_cmd output
in the log and in a sandbox of the result, a failing step's BuildException
pointing at the line that added it, build_in_background + get_build_status,
exists, tags, to_json / to_dockerfile and the ready-check helpers.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import json
import os
import traceback
import uuid

import pytest

from agent_sandbox import templates
from agent_sandbox.compat import (AsyncTemplate, BuildException, LogEntryEnd, LogEntryStart,
                                  Sandbox, Template, TemplateBuildStatus, wait_for_file,
                                  wait_for_port, wait_for_timeout, wait_for_url)


def _name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def context(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "test.txt").write_text("This is a test file.")
    os.symlink("test.txt", folder / "symlink.txt")
    os.symlink(str(folder / "test.txt"), folder / "abs-symlink.txt")
    os.symlink("12345test.txt", folder / "dangling.txt")
    (tmp_path / "notes.md").write_text("not copied\n")
    return tmp_path


def test_build_copy_run_and_create(engine, context):
    name = _name("py-builder")
    logs = []
    t = (Template(file_context_path=context)
         .from_base_image()
         .copy("folder/*", "folder", force_upload=True)
         .run_cmd("cat folder/test.txt && echo \" as $(whoami) in $(pwd)\"")
         .set_envs({"GREETING": "hello there"})
         .set_workdir("/home/user/app")
         .set_start_cmd("echo started > /home/user/app/started", wait_for_file(
             "/home/user/app/started")))
    # request_timeout: every step's bound, the upload's too (E2B's order of
    # steps, each its own call of the library)
    info = Template.build(t, f"{name}:v1", cpu_count=1, memory_mb=256, on_build_logs=logs.append,
                          request_timeout=120)
    try:
        assert info.name == f"{name}:v1" and len(info.template_id) == 20 and info.build_id
        assert "v1" in info.tags
        assert isinstance(logs[0], LogEntryStart) and isinstance(logs[-1], LogEntryEnd)
        text = "\n".join(e.message for e in logs)
        assert "\nUploaded 'folder/*'\nAll file uploads completed\nStarting building..." in text
        assert "This is a test file. as user in /home/user" in text
        assert all(e.level in ("debug", "info", "warn", "error") for e in logs)
        assert Template.exists(name) is True
        assert any(tag.tag == "v1" for tag in Template.get_tags(info.template_id))
        st = Template.get_build_status(info)
        assert st.status == TemplateBuildStatus.READY and st.reason is None
        assert st.logs == [e.message for e in st.log_entries]

        sb = Sandbox.create(name)
        try:
            out = sb.commands.run(
                "cat /home/user/folder/test.txt; echo; readlink /home/user/folder/symlink.txt "
                "/home/user/folder/dangling.txt /home/user/folder/abs-symlink.txt; "
                "test -e /home/user/folder/notes.md || echo no-md; cat /home/user/app/started; "
                "echo \"$GREETING\"").stdout
            # symlinks stay links (E2B's default), absolute ones unchanged
            assert out == (f"This is a test file.\ntest.txt\n12345test.txt\n"
                           f"{context / 'folder' / 'test.txt'}\nno-md\nstarted\nhello there\n")
        finally:
            sb.kill()
    finally:
        templates.delete_sync(name)
    assert Template.exists(name) is False


def test_a_failing_step_points_at_its_line(engine):
    t = Template().from_template("base").run_cmd("true")
    t = t.run_cmd("echo boom-out; exit 7")  # the failing step's line
    fail_line = traceback.extract_stack()[-1].lineno - 1
    logs = []
    with pytest.raises(BuildException) as ei:
        Template.build(t, _name("py-builder-fail"), on_build_logs=logs.append)
    assert "exit code 7" in str(ei.value) and "boom-out" in str(ei.value)
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert any(f.filename == __file__ and f.lineno == fail_line for f in frames), frames
    assert ei.value.state.error_step == 2
    assert isinstance(logs[-1], LogEntryEnd)
    assert any(e.level == "error" for e in logs)


def test_dockerignore_and_file_ignore_patterns(engine, tmp_path):
    # E2B's Template(file_ignore_patterns=...) and the context's .dockerignore
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("x\n")
    (tmp_path / "app" / "debug.log").write_text("x\n")
    (tmp_path / "app" / "local.env").write_text("x\n")
    (tmp_path / ".dockerignore").write_text("# logs\n**/*.log\n")
    name = _name("py-builder-ign")
    logs = []
    t = (Template(file_context_path=tmp_path, file_ignore_patterns=["app/*.env"])
         .from_template("base")
         .copy("app", "/opt/app")
         .run_cmd("cd /opt/app && ls | sed 's/^/have /'"))
    Template.build(t, name, on_build_logs=logs.append)
    try:
        text = "\n".join(e.message for e in logs)
        assert "have main.py" in text
        assert "debug.log" not in text and "local.env" not in text
    finally:
        templates.delete_sync(name)


def test_background_build_and_status(engine):
    name = _name("py-builder-bg")
    t = Template().from_template("base").skip_cache().run_cmd("echo bg-built")
    info = Template.build_in_background(t, name, cpu_count=1, memory_mb=256)
    try:
        st = Template.get_build_status(info)
        assert st.status in (TemplateBuildStatus.BUILDING, TemplateBuildStatus.READY)
        deadline = 120
        import time
        end = time.monotonic() + deadline
        while st.status not in (TemplateBuildStatus.READY, TemplateBuildStatus.ERROR) \
                and time.monotonic() < end:
            time.sleep(0.05)
            st = Template.get_build_status(info)
        assert st.status == TemplateBuildStatus.READY
        assert any("bg-built" in m for m in Template.get_build_status(info, logs_offset=0).logs)
    finally:
        templates.delete_sync(name)


def test_async_template_and_tags(engine, tmp_path):
    (tmp_path / "x.txt").write_text("x\n")
    name = _name("py-builder-async")

    async def go():
        t = AsyncTemplate(file_context_path=tmp_path).from_template("base").copy(
            "x.txt", "/home/user/x.txt", mode=0o600)
        info = await AsyncTemplate.build(t, name, tags=["one"])
        assert await AsyncTemplate.exists(name)
        got = await AsyncTemplate.assign_tags(f"{name}:one", ["two"])
        assert got.tags == ["two"] and got.build_id == info.build_id
        tags = {x.tag for x in await AsyncTemplate.get_tags(info.template_id)}
        assert {"one", "two"} <= tags
        await AsyncTemplate.remove_tags(name, "two")
        tags = {x.tag for x in await AsyncTemplate.get_tags(info.template_id)}
        assert "two" not in tags
    try:
        asyncio.run(go())
    finally:
        templates.delete_sync(name)


def test_native_build_steps_and_a_raising_log_callback(engine, tmp_path):
    (tmp_path / "f.txt").write_text("native\n")
    name = _name("py-native-steps")
    spec = {"fromTemplate": "base", "steps": [
        {"type": "COPY", "args": ["f.txt", "/home/user/", "", ""]},
        {"type": "RUN", "args": ["cat /home/user/f.txt"]}]}
    lines = []
    try:
        st = templates.build_steps_sync(name, spec, context_dir=tmp_path, on_log=lines.append)
        assert st.status == "ready" and st.error is None
        assert any(x.message == "native" for x in lines)
        assert lines[0].timestamp is not None

        class Stop(Exception):
            pass

        def stop(line):
            raise Stop("enough")

        with pytest.raises(Stop):
            templates.build_steps_sync(name, json.dumps(spec), context_dir=tmp_path,
                                       skip_cache=True, on_log=stop)
    finally:
        # the stopped build goes on in the engine: delete once it has ended
        import time
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                templates.delete_sync(name)
                break
            except Exception:
                time.sleep(0.05)


def test_to_dockerfile_to_json_and_ready_checks():
    t = (Template().from_ubuntu_image("24.04").copy("README.md", "/app/README.md", user="root")
         .set_envs({"A": "1", "B": "2"}).run_cmd('echo "hi"', user="root"))
    assert Template.to_dockerfile(t) == ("FROM ubuntu:24.04\nCOPY README.md /app/README.md\n"
                                         "ENV A=1 B=2\nRUN echo \"hi\"\n")
    j = json.loads(Template.to_json(t))
    assert j["fromImage"] == "ubuntu:24.04" and [s["type"] for s in j["steps"]] == [
        "COPY", "ENV", "RUN"]
    with pytest.raises(ValueError):
        Template.to_dockerfile(Template().from_template("base"))
    assert wait_for_port(8080).get_cmd() == '[ -n "$(ss -Htuln sport = :8080)" ]'
    assert wait_for_timeout(1500).get_cmd() == "sleep 1"
    assert wait_for_url("http://x/?a=1&b").get_cmd().startswith(
        "curl -s -o /dev/null -w \"%{http_code}\" 'http://x/?a=1&b'")
    with pytest.raises(Exception, match="escapes the context"):
        Template().from_template("base").copy("../secret", "/x")


def test_from_dockerfile(engine):
    df = ("# a comment\nFROM e2bdev/base\nENV GREETING=\"hi there\" OTHER=x\n"
          "RUN echo one \\\n    && echo \"$GREETING\" > /home/user/df.txt\nWORKDIR /home/user\n"
          "USER user\n")
    t = Template().from_dockerfile(df)
    j = json.loads(Template.to_json(t))
    assert j["fromImage"] == "e2bdev/base"
    assert [(s["type"], s["args"]) for s in j["steps"]] == [
        ("USER", ["root"]), ("WORKDIR", ["/"]), ("ENV", ["GREETING", "hi there", "OTHER", "x"]),
        ("RUN", ["echo one      && echo \"$GREETING\" > /home/user/df.txt"]),
        ("WORKDIR", ["/home/user"]), ("USER", ["user"])]
    with pytest.raises(ValueError, match="Multi-stage"):
        Template().from_dockerfile("FROM a AS x\nFROM b\n")
    name = _name("py-dockerfile")
    Template.build(t, name)  # FROM e2bdev/base: E2B's base image is our base template
    try:
        sb = Sandbox.create(name)
        try:
            assert sb.commands.run("cat /home/user/df.txt").stdout == "hi there\n"
        finally:
            sb.kill()
    finally:
        templates.delete_sync(name)
