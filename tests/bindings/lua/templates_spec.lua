-- Templates (asb_templates_*): build from a template.yaml, the build cache,
-- get, list, use, delete; and each failure kind as nil, err.
-- SPDX-License-Identifier: Apache-2.0
local H = require "helper"
local asb = require "agent_sandbox"

local function dir_with(files)
  local d = assert(os.getenv("ASB_TEST_STATE")) .. "/tmpl-" .. tostring(math.random(1 << 30))
  assert(os.execute("mkdir -p " .. H.q(d)))
  for name, text in pairs(files) do
    local f = assert(io.open(d .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  return d
end

describe("templates", function()
  it("build, are cached, got, listed, used and deleted", function()
    local d = dir_with({
      ["template.yaml"] = "name: lua-tmpl\ndescription: made from Lua\nsteps:\n" ..
        "  - copy: {src: greeting.txt, dest: /srv/greeting.txt}\n" ..
        "  - run: echo built > /srv/step\n",
      ["greeting.txt"] = "hello\n",
    })
    local t = assert(asb.templates.build(d))
    assert.are.equal("lua-tmpl", t.name)
    assert.are.equal(20, #t.id)
    assert.is_false(t.cached)
    assert.are.equal("made from Lua", t.description)
    assert.matches("greeting.txt", t.build_log)
    assert.are.equal(t.id, asb.json_decode(t.json).templateID)
    assert.is_true(assert(asb.templates.build(d)).cached)
    assert.is_false(assert(asb.templates.build(d, { force = true })).cached)
    local by_name = assert(asb.templates.get("lua-tmpl"))
    assert.are.equal(t.id, by_name.id)
    assert.is_nil(by_name.cached)
    local names = {}
    for _, x in ipairs(assert(asb.templates.list())) do names[x.name] = x.id end
    assert.are.equal(t.id, names["lua-tmpl"])
    assert.truthy(names.base)
    do
      local sb <close> = assert(asb.Sandbox.create{ template = "lua-tmpl", timeout_ms = 120000 })
      assert.are.equal("hello\nbuilt\n", assert(sb.commands:run("cat /srv/greeting.txt /srv/step")).stdout)
      H.fails("ASB_EEXISTS", asb.templates.delete("lua-tmpl")) -- in use
    end
    assert.is_true(assert(asb.templates.delete("lua-tmpl")))
    H.fails("ASB_ENOTFOUND", asb.templates.get("lua-tmpl"))
    H.fails("ASB_ENOTFOUND", asb.templates.delete("lua-tmpl"))
  end)

  it("return nil, err for each kind of failure", function()
    assert.matches("has no template.yaml", H.fails("ASB_EINVAL", asb.templates.build(dir_with({}))).message)
    assert.matches("template%.yaml:1:7: name:",
                   H.fails("ASB_EINVAL", asb.templates.build(dir_with({ ["template.yaml"] = "name: Bad-Name\n" }))).message)
    assert.matches("exit code 3", H.fails("ASB_EBUILD", asb.templates.build(dir_with({
      ["template.yaml"] = "name: lua-broken\nsteps:\n  - run: exit 3\n" }))).message)
    H.fails("ASB_ENOTFOUND", asb.templates.build("/no/such/dir"))
    H.fails("ASB_ENOTFOUND", asb.templates.get("no-such-template"))
    H.fails("ASB_EINVAL", asb.templates.delete("base"))
  end)
  it("the builder's steps one call each (request, hash, link, upload, trigger)", function()
    local d = dir_with({ ["split.txt"] = ("lua split %d\n"):format(os.time()) })
    local hash = assert(asb.templates.files_hash("split.txt", { context_dir = d }))
    assert.are.equal(64, #hash)
    local r = assert(asb.templates.request_build("lua-split:v1"))
    assert.are.equal("waiting", r.status)
    assert.are.equal("v1", r.tags[1])
    local present, url = asb.templates.files_link(r.template_id, hash)
    if not present then
      assert.are.equal(hash, assert(asb.templates.files_upload(url, "split.txt", { context_dir = d })))
    end
    assert.are.equal(true, (asb.templates.files_link(r.template_id, hash)))
    assert(asb.templates.trigger_build(r.template_id, r.build_id, {
      fromTemplate = "base",
      steps = { { type = "COPY", args = { "split.txt", "/opt/", "", "" }, filesHash = hash } } }))
    local st = H.eventually(function()
      local s = assert(asb.templates.build_status(r.template_id, r.build_id))
      return (s.status == "ready" or s.status == "error") and s
    end, 300)
    assert.are.equal("ready", st and st.status)
    assert.is_true(assert(asb.templates.delete("lua-split")))
  end)
  it("build E2B's builder steps (COPY from a context dir, RUN), with status and errors", function()
    local d = dir_with({ ["hello.txt"] = "from lua's context\n" })
    local b = assert(asb.templates.build_steps("lua-steps:v1", {
      fromTemplate = "base",
      steps = {
        { type = "COPY", args = { "hello.txt", "/home/user/hello.txt", "", "" } },
        { type = "RUN", args = { "cat /home/user/hello.txt" } },
      },
    }, { context_dir = d, cpu_count = 1, memory_mb = 256 }))
    assert.are.equal("ready", b.status)
    assert.is_nil(b.error_step)
    local said = false
    for _, l in ipairs(b.logs) do
      if l.message == "from lua's context" then said = true end
    end
    assert.is_true(said)
    assert.is_true(assert(asb.templates.exists("lua-steps")))
    assert.are.equal(false, asb.templates.exists("no-such-lua-steps"))
    local st = assert(asb.templates.build_status(b.template_id, b.build_id, { logs_offset = 1 }))
    assert.are.equal("ready", st.status)
    assert.are.equal(#b.logs - 1, #st.logs)
    do
      local sb <close> = assert(asb.Sandbox.create{ template = "lua-steps", timeout_ms = 120000 })
      assert.are.equal("from lua's context\n", assert(sb.commands:run("cat /home/user/hello.txt")).stdout)
    end
    assert.is_true(assert(asb.templates.delete("lua-steps")))
    local e = H.fails("ASB_EBUILD", asb.templates.build_steps("lua-steps-bad", [[
      {"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["exit 4"]}]}]]))
    assert.matches("exit code 4", e.message)
    assert.are.equal(1, e.build.error_step)
    assert.are.equal("error", e.build.status)
    H.fails("ASB_EINVAL", asb.templates.build_steps("lua-steps-bad", {
      fromTemplate = "base", steps = { { type = "COPY", args = { "../x", "/x" } } } },
      { context_dir = d }))
    -- ignore_patterns leave files out: here all of what the COPY names
    assert.matches("left out", H.fails("ASB_EINVAL", asb.templates.build_steps("lua-steps-bad", {
      fromTemplate = "base", steps = { { type = "COPY", args = { "hello.txt", "/x/" } } } },
      { context_dir = d, ignore_patterns = { "*.txt" } })).message)
  end)
end)
