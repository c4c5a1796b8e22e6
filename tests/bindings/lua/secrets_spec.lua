-- asb.secrets (asb_secrets_*, secret.h) against the engine's /secrets
-- store: create, get by id and by name, update (new version; metadata kept
-- unless given), list page by page, delete; a taken name, a bad name and
-- an unknown secret are errors; no result carries a value.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"
local secrets = asb.secrets

describe("agent_sandbox secrets", function()
  it("create, get, update, list, delete; values never come back", function()
    local tag = "lua-sec-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e6))
    local made = {}
    local ok, err = pcall(function()
      local a = assert(secrets.create(tag .. "-a", "sk-value-a", { metadata = { env = "test" } }))
      made[#made + 1] = a.id
      assert.matches("^sec_", a.id)
      assert.are.equal(tag .. "-a", a.name)
      assert.are.equal(1, a.version)
      assert.are.same({ env = "test" }, a.metadata)
      assert.is_true(a.created_at > 1.7e9 and a.updated_at >= a.created_at)
      assert.are.equal(a.id, assert(secrets.get(a.name)).id) -- by name and by id
      assert.are.equal(a.name, assert(secrets.get(a.id)).name)
      local u = assert(secrets.update(a.id, "sk-value-a2"))
      assert.are.equal(2, u.version)
      assert.are.same({ env = "test" }, u.metadata) -- kept
      assert.are.same({ k = "v" }, assert(secrets.update(a.name, "sk-value-a3", { metadata = { k = "v" } })).metadata)
      for _, n in ipairs({ "b", "c" }) do made[#made + 1] = assert(secrets.create(tag .. "-" .. n, "sk-value-x")).id end
      H.fails("ASB_EEXISTS", secrets.create(tag .. "-b", "v"))
      H.fails("ASB_EINVAL", secrets.create("bad name{", "v"))
      H.fails("ASB_ENOTFOUND", secrets.update("no-such-secret", "v"))
      H.fails("ASB_ENOTFOUND", secrets.get("no-such-secret"))
      -- page by page (limit 2: two pages for three), then all at once
      local ids, pages, token = {}, 0, nil
      repeat
        local page, nxt = assert(secrets.list_page{ limit = 2, next_token = token })
        assert.is_true(#page <= 2)
        for _, s in ipairs(page) do ids[#ids + 1] = s.id end
        token, pages = nxt, pages + 1
      until token == nil
      assert.are.same(made, ids)
      assert.are.equal(2, pages)
      local all = assert(secrets.list())
      local seen = {}
      for _, s in ipairs(all) do
        seen[#seen + 1] = s.id
        for k, v in pairs(s) do
          assert.is_falsy(tostring(v):find("sk-value", 1, true), k)
        end
      end
      assert.are.same(made, seen)
      assert.is_true(assert(secrets.delete(made[2])))
      H.fails("ASB_ENOTFOUND", secrets.delete(made[2]))
      assert.are.equal(2, #assert(secrets.list()))
      assert.are.equal("${e2b.secrets." .. a.name .. "}", secrets.fill(a.name))
      assert.has_error(function() secrets.create(tag .. "-d", 42) end)
    end)
    for _, id in ipairs(made) do secrets.delete(id) end
    assert(ok, err)
  end)
end)
