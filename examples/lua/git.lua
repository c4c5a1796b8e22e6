-- Git in a sandbox: a repository from init to a push into a bare
-- repository, a clone of it, a commit there pulled back, branches and the
-- work tree's status (sb.git). Remotes by path, inside the sandbox; for an
-- http(s) remote pass username and password (they never reach a command
-- line).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local sb <close> = assert(asb.Sandbox.create{})
local git = sb.git
assert(git:init("/tmp/remote.git", { bare = true, initial_branch = "main" }))
assert(git:init("/tmp/repo", { initial_branch = "main" }))
assert(git:configure_user("Example", "example@example.com"))
assert(sb.files:write("/tmp/repo/README", "hello\n"))
print("untracked", git:status("/tmp/repo").file_status[1].name)
assert(git:add("/tmp/repo"))
assert(git:commit("/tmp/repo", "first"))
assert(git:remote_add("/tmp/repo", "origin", "/tmp/remote.git"))
local _, err = git:push("/tmp/repo")
print("push without upstream", err.code)
assert(git:push("/tmp/repo", { remote = "origin", branch = "main" }))

assert(git:clone("/tmp/remote.git", { path = "/tmp/clone" }))
assert(sb.files:write("/tmp/clone/NEWS", "news\n"))
assert(git:add("/tmp/clone", { files = { "NEWS" } }))
assert(git:commit("/tmp/clone", "news"))
assert(git:push("/tmp/clone"))
assert(git:pull("/tmp/repo"))
print("pulled", sb.files:read("/tmp/repo/NEWS"):gsub("\n", ""))

assert(git:create_branch("/tmp/repo", "topic"))
local b = git:branches("/tmp/repo")
print("branches", table.concat(b.branches, ","), "on", b.current_branch)
local st = git:status("/tmp/repo")
print("clean", st.is_clean, "upstream", st.upstream)
