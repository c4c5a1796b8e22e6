"""sandbox.git (asb_git_*) from Python, blocking and async, native and
through agent_sandbox.compat: a repository from init to push, pull and
clone against a bare repository inside the sandbox (no network), and the
errors E2B's SDKs raise.
SPDX-License-Identifier: Apache-2.0"""

import asyncio
import inspect
import uuid

import pytest

from agent_sandbox import (
    CommandExitException,
    GitAuthException,
    GitUpstreamException,
    InvalidArgumentException,
)
from agent_sandbox.git import AsyncGit, Git


@pytest.fixture
def base(sync_sandbox):
    d = f"/tmp/pygit-{uuid.uuid4().hex[:8]}"
    sync_sandbox.commands.run(f"mkdir -p {d}", check=True)
    yield d
    sync_sandbox.commands.run(f"rm -rf {d}")


def test_init_commit_push_pull_clone(sync_sandbox, base):
    git = sync_sandbox.git
    git.init(f"{base}/remote.git", bare=True, initial_branch="main")
    repo = f"{base}/repo"
    git.init(repo, initial_branch="main")
    git.configure_user("Py Bot", "py@example.com", scope="local", path=repo)
    assert git.get_config("user.name", scope="local", path=repo) == "Py Bot"
    assert git.get_config("asbtest.unset", scope="local", path=repo) is None
    sync_sandbox.files.write(f"{repo}/a.txt", "one\n")

    st = git.status(repo)
    assert st.current_branch == "main" and not st.detached and st.upstream is None
    assert [(f.name, f.status, f.staged) for f in st.file_status] == [("a.txt", "untracked", False)]
    assert st.has_untracked and not st.is_clean

    git.add(repo, all=True)
    st = git.status(repo)
    assert st.has_staged and st.file_status[0].status == "added"
    r = git.commit(repo, "first", author_name="A U", author_email="au@example.com")
    assert r.exit_code == 0
    assert git.status(repo).is_clean

    with pytest.raises(CommandExitException) as e:
        git.commit(repo, "nothing to commit")
    assert e.value.exit_code != 0 and "nothing" in (e.value.stdout + e.value.stderr)

    git.remote_add(repo, "origin", f"{base}/remote.git")
    assert git.remote_get(repo, "origin") == f"{base}/remote.git"
    assert git.remote_get(repo, "nope") is None
    with pytest.raises(GitUpstreamException):
        git.push(repo)
    git.push(repo, remote="origin", branch="main")
    st = git.status(repo)
    assert st.upstream == "origin/main" and st.ahead == 0 and st.behind == 0

    clone = f"{base}/clone"
    git.clone(f"{base}/remote.git", clone)
    sync_sandbox.files.write(f"{clone}/b.txt", "two\n")
    git.add(clone, files=["b.txt"])
    git.commit(clone, "second", author_name="B U", author_email="bu@example.com")
    git.push(clone)
    git.pull(repo)
    assert sync_sandbox.files.read(f"{repo}/b.txt") == "two\n"

    git.create_branch(repo, "topic")
    b = git.branches(repo)
    assert b.branches == ["main", "topic"] and b.current_branch == "topic"
    git.checkout_branch(repo, "main")
    git.delete_branch(repo, "topic", force=True)
    assert git.branches(repo).branches == ["main"]

    sync_sandbox.files.write(f"{repo}/a.txt", "changed\n")
    git.restore(repo, ["a.txt"])
    assert sync_sandbox.files.read(f"{repo}/a.txt") == "one\n"
    git.reset(repo, mode="hard", target="HEAD~1")
    assert not sync_sandbox.files.exists(f"{repo}/b.txt")
    with pytest.raises(InvalidArgumentException, match="soft, mixed, hard, merge, keep"):
        git.reset(repo, mode="bogus")


def test_credentials_need_a_username_and_an_http_remote(sync_sandbox, base):
    with pytest.raises(InvalidArgumentException, match="Username is required"):
        sync_sandbox.git.clone("https://example.invalid/r.git", f"{base}/x", password="t")
    with pytest.raises(InvalidArgumentException, match="http"):
        sync_sandbox.git.clone(f"{base}/none.git", f"{base}/x", username="u", password="t")
    assert issubclass(GitAuthException, Exception)


def test_async_git_matches_the_blocking_one(sandbox, base):
    sync_names = {n for n in dir(Git) if not n.startswith("_")}
    assert sync_names == {n for n in dir(AsyncGit) if not n.startswith("_")}
    for n in sync_names:
        assert inspect.iscoroutinefunction(getattr(AsyncGit, n)), n
        assert inspect.signature(getattr(Git, n)) == inspect.signature(getattr(AsyncGit, n))

    async def go():
        repo = f"{base}/arepo"
        await sandbox.git.init(repo, initial_branch="trunk")
        st = await sandbox.git.status(repo)
        assert st.current_branch == "trunk" and st.is_clean
        with pytest.raises(GitUpstreamException):
            await sandbox.git.pull(repo)

    asyncio.run(go())


def test_compat_sandbox_has_e2b_git(engine):
    from agent_sandbox.compat import GitStatus, Sandbox

    sb = Sandbox.create(timeout=120)
    try:
        sb.git.init("/tmp/compat-repo", initial_branch="main")
        st = sb.git.status("/tmp/compat-repo")
        assert isinstance(st, GitStatus) and st.current_branch == "main"
    finally:
        sb.kill()
