"""Git in a sandbox (sandbox.git, E2B's names): init, commit, push to a
bare repository, clone, pull, branches, status. For an http(s) remote pass
username= and password= (they never reach a command line).
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import GitUpstreamException, Sandbox


async def main():
    async with await Sandbox.create() as sandbox:
        git = sandbox.git
        await git.init("/tmp/remote.git", bare=True, initial_branch="main")
        await git.init("/tmp/repo", initial_branch="main")
        await git.configure_user("Example", "example@example.com")
        await sandbox.files.write("/tmp/repo/README.md", "hello\n")
        await git.add("/tmp/repo")
        await git.commit("/tmp/repo", "First commit")
        await git.remote_add("/tmp/repo", "origin", "/tmp/remote.git")
        await git.push("/tmp/repo", remote="origin", branch="main")

        await git.clone("/tmp/remote.git", "/tmp/clone")
        await sandbox.files.write("/tmp/clone/NOTES.md", "notes\n")
        status = await git.status("/tmp/clone")
        print("clone on", status.current_branch, "upstream", status.upstream,
              [(f.name, f.status) for f in status.file_status])
        await git.add("/tmp/clone")
        await git.commit("/tmp/clone", "Notes")
        await git.push("/tmp/clone")
        await git.pull("/tmp/repo")
        print("pulled:", await sandbox.files.read("/tmp/repo/NOTES.md"), end="")

        await git.create_branch("/tmp/repo", "feature")
        branches = await git.branches("/tmp/repo")
        print("branches", branches.branches, "on", branches.current_branch)
        try:
            await git.push("/tmp/repo")
        except GitUpstreamException:
            print("feature has no upstream yet")


asyncio.run(main())
