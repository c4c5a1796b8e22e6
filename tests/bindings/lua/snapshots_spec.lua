-- Snapshots and fork (docs/snapshots.md) through the Lua binding: the
-- files of that instant, a fork's writes its own, the list, delete.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

describe("snapshots", function()
  local sb, from, fork
  setup(function() sb = H.sandbox() end)
  teardown(function()
    for _, s in ipairs({ fork, from, sb }) do if s then s:kill() end end
  end)

  it("keep the files of their instant, forks write their own", function()
    assert(sb.commands:run("echo one > /home/user/f"))
    local id = assert(sb:create_snapshot{ name = "lua-snap" })
    assert.are.equal("lua-snap:default", id)
    assert(sb.commands:run("echo two > /home/user/f"))
    from = assert(asb.Sandbox.create{ template = id, timeout_ms = 120000 })
    assert.are.equal("one\n", assert(from.commands:run("cat /home/user/f")).stdout)
    fork = assert(sb:fork{ timeout_ms = 120000, keep_processes = false })
    assert.are_not.equal(sb.id, fork.id)
    -- the fork options (issue 20): no --pause-criu, booted fresh on the files
    assert.are.equal("files", fork.fork_mode)
    assert.is_nil(sb.fork_mode)
    assert.are.equal("files", assert(fork:get_info()).fork_mode)
    assert.is_nil(assert(sb:get_info()).fork_mode)
    assert.has_error(function() sb:fork_many(101) end)
    assert.has_error(function() sb:fork{ keep_processes = "no" } end)
    assert.are.equal("two\n", assert(fork.commands:run("cat /home/user/f; echo f > /home/user/f")).stdout)
    assert.are.equal("two\n", assert(sb.commands:run("cat /home/user/f")).stdout)
    assert.are.same({ id }, assert(asb.Sandbox.list_snapshots{ sandbox_id = sb.id }))
    assert.is_true(asb.Sandbox.delete_snapshot(id))
    assert.is_false(asb.Sandbox.delete_snapshot(id))
    assert.are.same({}, assert(asb.Sandbox.list_snapshots{ name = "lua-snap" }))
    local ok, err = sb:create_snapshot{ name = "Bad/Name" }
    assert.is_nil(ok)
    assert.matches("invalid snapshot name", err.message)
  end)
end)

describe("compat snapshots", function()
  local compat = require "agent_sandbox.compat"
  it("have E2B's names and shapes", function()
    local sb = assert(compat.Sandbox.create{ timeout = 120 })
    local ok, err = pcall(function()
      assert(sb.commands.run("echo c > /home/user/c"))
      local info = assert(sb.create_snapshot{ name = "lua-compat-snap" })
      assert.are.same({ snapshot_id = "lua-compat-snap:default", names = { "lua-compat-snap:default" } }, info)
      local p = compat.Sandbox.list_snapshots{ sandbox_id = sb.sandbox_id }
      local items = assert(p.next_items())
      assert.is_false(p.has_next)
      assert.are.equal(1, #items)
      local forks = assert(sb.fork{ count = 2, keep_processes = true })
      assert.are.equal(2, #forks)
      assert.are_not.equal(forks[1].sandbox_id, forks[2].sandbox_id)
      for _, f in ipairs(forks) do
        assert.are.equal("files", f.fork_mode) -- no --pause-criu: files, whatever was asked
        assert.are.equal("c\n", assert(f.commands.run("cat /home/user/c")).stdout)
        f.kill()
      end
      assert.is_true(compat.Sandbox.delete_snapshot(info.snapshot_id))
      assert.is_false(compat.Sandbox.delete_snapshot(info.snapshot_id))
      -- the class forms by sandbox id (E2B's), and a positional name
      local by_id = assert(compat.Sandbox.create_snapshot(sb.sandbox_id, { name = "lua-compat-byid" }))
      assert.are.equal("lua-compat-byid:default", by_id.snapshot_id)
      assert.are.equal("lua-compat-pos:default", assert(sb.create_snapshot("lua-compat-pos")).snapshot_id)
      local one = assert(compat.Sandbox.fork(sb.sandbox_id, { timeout = 60 }))
      assert.are.equal(1, #one)
      assert.are.equal("c\n", assert(one[1].commands.run("cat /home/user/c")).stdout)
      one[1].kill()
      for _, id in ipairs({ by_id.snapshot_id, "lua-compat-pos:default" }) do
        assert.is_true(compat.Sandbox.delete_snapshot(id))
      end
      local gone, gerr = compat.Sandbox.fork("no-such-sandbox")
      assert.is_nil(gone)
      assert.is_true(compat.SandboxNotFoundException:is(gerr))
    end)
    sb.kill()
    assert(ok, err)
  end)
end)
