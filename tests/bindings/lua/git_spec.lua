-- sb.git (asb_git_*) from Lua: a repository from init to push, pull and
-- clone against a bare repository inside the sandbox (no network), and the
-- errors (ASB_ECOMMANDEXIT, ASB_EGITUPSTREAM, ASB_EINVAL) with git's result.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local sb
local base = "/tmp/luagit-" .. tostring(os.time()) .. "-" .. tostring(math.random(1 << 30))
setup(function()
  sb = H.sandbox()
  assert(sb.commands:run("mkdir -p " .. base, { check = true }))
end)
teardown(function() if sb then sb:kill() end end)

describe("sb.git", function()
  it("inits, commits, pushes, pulls, clones and branches", function()
    local git = sb.git
    assert(git:init(base .. "/remote.git", { bare = true, initial_branch = "main" }))
    local repo = base .. "/repo"
    assert(git:init(repo, { initial_branch = "main" }))
    assert(git:configure_user("Lua Bot", "lua@example.com", { scope = "local", path = repo }))
    assert.are.equal("Lua Bot", git:get_config("user.name", { scope = "local", path = repo }))
    assert.is_false(git:get_config("asbtest.unset", { scope = "local", path = repo }))
    assert(sb.files:write(repo .. "/a.txt", "one\n"))

    local st = assert(git:status(repo))
    assert.are.equal("main", st.current_branch)
    assert.is_false(st.detached)
    assert.is_nil(st.upstream)
    assert.are.equal(1, #st.file_status)
    assert.are.same({ "a.txt", "untracked", false },
                    { st.file_status[1].name, st.file_status[1].status, st.file_status[1].staged })

    assert(git:add(repo, { all = true }))
    st = assert(git:status(repo))
    assert.are.equal("added", st.file_status[1].status)
    assert.is_true(st.file_status[1].staged)
    local r = assert(git:commit(repo, "first", { author_name = "A U", author_email = "au@example.com" }))
    assert.are.equal(0, r.exit_code)
    assert.is_true(assert(git:status(repo)).is_clean)
    local log = assert(sb.commands:run("git -C " .. repo .. " log -1 --format=%an/%s", { check = true }))
    assert.are.equal("A U/first\n", log.stdout)

    -- a failing git: nil, err with git's result
    local err = H.fails("ASB_ECOMMANDEXIT", git:commit(repo, "nothing to commit"))
    assert.is_true(err.exit_code ~= 0)
    assert.matches("nothing", err.stdout .. err.stderr)

    assert(git:remote_add(repo, "origin", base .. "/remote.git"))
    assert.are.equal(base .. "/remote.git", git:remote_get(repo, "origin"))
    assert.is_false(git:remote_get(repo, "nope"))
    err = H.fails("ASB_EGITUPSTREAM", git:push(repo))
    assert.is_string(err.stderr)
    assert(git:push(repo, { remote = "origin", branch = "main" }))
    st = assert(git:status(repo))
    assert.are.same({ "origin/main", 0, 0 }, { st.upstream, st.ahead, st.behind })

    local clone = base .. "/clone"
    assert(git:clone(base .. "/remote.git", { path = clone }))
    assert(sb.files:write(clone .. "/b.txt", "two\n"))
    assert(git:add(clone, { files = { "b.txt" } }))
    assert(git:commit(clone, "second", { author_name = "B U", author_email = "bu@example.com" }))
    assert(git:push(clone))
    assert(git:pull(repo))
    assert.are.equal("two\n", sb.files:read(repo .. "/b.txt"))

    assert(git:create_branch(repo, "topic"))
    local b = assert(git:branches(repo))
    assert.are.same({ branches = { "main", "topic" }, current_branch = "topic" }, b)
    assert(git:checkout_branch(repo, "main"))
    assert(git:delete_branch(repo, "topic", { force = true }))
    assert.are.same({ "main" }, assert(git:branches(repo)).branches)
  end)

  it("resets and restores", function()
    local git, repo = sb.git, base .. "/rr"
    assert(git:init(repo, { initial_branch = "main" }))
    assert(git:configure_user("R", "r@example.com", { scope = "local", path = repo }))
    assert(sb.files:write(repo .. "/f.txt", "v1\n"))
    assert(git:add(repo))
    assert(git:commit(repo, "v1"))
    assert(sb.files:write(repo .. "/f.txt", "v2\n"))
    assert(git:restore(repo, { "f.txt" }))
    assert.are.equal("v1\n", sb.files:read(repo .. "/f.txt"))
    assert(sb.files:write(repo .. "/f.txt", "v3\n"))
    assert(git:add(repo, { files = { "f.txt" } }))
    assert(git:restore(repo, { "f.txt" }, { staged = true }))
    local st = assert(git:status(repo))
    assert.is_false(st.file_status[1].staged)
    assert(git:reset(repo, { mode = "hard" }))
    assert.are.equal("v1\n", sb.files:read(repo .. "/f.txt"))
    H.fails("ASB_EINVAL", git:reset(repo, { mode = "sideways" }))
  end)

  it("refuses bad arguments before anything runs", function()
    -- credentials need a username and an http(s) remote
    H.fails("ASB_EINVAL", sb.git:clone(base .. "/remote.git", { path = base .. "/c2",
                                                                  username = "u", password = "p" }))
    H.fails("ASB_EINVAL", sb.git:clone("https://example.invalid/r.git", { password = "p" }))
    assert.has_error(function() sb.git:clone(base, { bogus = 1 }) end, "git:clone: unknown option 'bogus'")
    assert.has_error(function() sb.git:init(42) end)
    assert.are.equal("agent_sandbox.Git(" .. sb.id .. ")", tostring(sb.git))
  end)
end)
