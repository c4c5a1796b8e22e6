-- The Lua binding's cost over the C library, measured in one run against one
-- real engine and one sandbox, the variants interleaved round by round so
-- that load drift hits them alike:
--
--   - commands.run("true"): C (lua_bench_c: asb_commands_run on a handle of
--     its own to the same sandbox, timed in C), agent_sandbox.core (the
--     SWIG module, no Lua layer), agent_sandbox (sb.commands:run);
--   - a 1 MiB file round trip (write + read), the same three ways.
--
-- Each round makes one call of each variant (C, core, agent_sandbox, in that
-- order), so the drift of a loaded machine spreads over all three.
--
-- usage (as root, from anywhere):
--   ninja -C build lua-binding lua_bench_c
--   lua5.4 bench/lua_bench.lua [iterations]     (ASB_ENGINE_BIN, ASB_BUILD_DIR)
-- SPDX-License-Identifier: Apache-2.0

local here = arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "bench"
local build = os.getenv("ASB_BUILD_DIR") or (here .. "/../build")
package.path = build .. "/lua/?.lua;" .. build .. "/lua/?/init.lua;" .. package.path
package.cpath = build .. "/lua/?.so;" .. build .. "/bench/?.so;" .. package.cpath
local engine_bin = os.getenv("ASB_ENGINE_BIN") or (build .. "/core/engine/agent-sandboxd")

local c = require "lua_bench_c"
local asb = require "agent_sandbox"
local core = asb._core
local now = c.now

local iters = tonumber(arg[1]) or 300

-- ---- an engine of its own ------------------------------------------------------------

local function sh(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end

local state = sh("mktemp -d /tmp/asb-luabench-XXXXXX")
local engine = assert(io.popen(("exec sh -c 'echo $$; exec %s --state-dir %s/engine --listen " ..
                                "127.0.0.1:0 --cgroup-name asbluabench-$$ --pool 2 " ..
                                "--kill-on-exit 2>/dev/null'"):format(engine_bin, state), "r"))
local pid = engine:read("l")
local line = engine:read("l")
local function stop_engine()
  if pid then os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
  engine:close()
  os.execute("rm -rf " .. state)
end
if not (line and line:match("^listening on")) then
  stop_engine()
  error("the engine did not start (" .. engine_bin .. ")")
end
local url = "http://" .. line:match("^listening on (%S+)")
local f = assert(io.open(state .. "/engine/api_key"))
local key = f:read("l")
f:close()

-- ---- measuring -------------------------------------------------------------------------

local function pct(xs, p)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  return s[math.min(#s, math.floor(p / 100 * #s) + 1)]
end

local function mean(xs)
  local t = 0
  for _, x in ipairs(xs) do t = t + x end
  return t / #xs
end

local function interleave(order, variants)
  local samples = {}
  for _, k in ipairs(order) do
    variants[k]() -- warm up
    samples[k] = {}
  end
  for _ = 1, iters do
    for _, k in ipairs(order) do
      local xs = samples[k]
      xs[#xs + 1] = variants[k]()
    end
  end
  return samples
end

local function report(name, order, samples)
  local base = pct(samples[order[1]], 50)
  print("\n" .. name)
  print(("  %-22s %10s %10s %10s %10s"):format("", "p50 us", "p90 us", "mean us", "x C (p50)"))
  for _, k in ipairs(order) do
    local xs = samples[k]
    local p50 = pct(xs, 50)
    print(("  %-22s %10.1f %10.1f %10.1f %10.3f"):format(k, p50 * 1e6, pct(xs, 90) * 1e6,
                                                        mean(xs) * 1e6, p50 / base))
  end
end

local ok, err = pcall(function()
  local client = assert(asb.Client.new{ api_url = url, sandbox_url = url, api_key = key })
  local sb <close> = assert(asb.Sandbox.create{ client = client, timeout_ms = 1800000 })
  local h = asb._private(sb).h
  local ch = c.open(sb.id, url, key)
  print(("lua_bench: %d interleaved rounds (one call of each variant per round); engine %s; %s")
        :format(iters, engine_bin, _VERSION))

  local order = { "C", "core (SWIG)", "agent_sandbox" }
  report('commands.run("true") round trip', order, interleave(order, {
    C = function() return ch:run("true") end,
    ["core (SWIG)"] = function()
      local t = now()
      local rc = core.asb_commands_run(h, "true", nil)
      local dt = now() - t
      assert(rc == 0)
      return dt
    end,
    agent_sandbox = function()
      local t = now()
      assert(sb.commands:run("true"))
      return now() - t
    end,
  }))

  local data = {}
  for i = 1, 1 << 14 do data[i] = string.pack("<I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4",
                                               math.random(0, 0xffffffff), i, i, i, i, i, i, i,
                                               i, i, i, i, i, i, i, i) end
  data = table.concat(data)
  assert(#data == 1 << 20)
  report("1 MiB file write + read", order, interleave(order, {
    C = function() return ch:file("/tmp/bench.bin", data) end,
    ["core (SWIG)"] = function()
      local t = now()
      local rc = core.asb_files_write(h, "/tmp/bench.bin", data, nil)
      local rc2, back = core.asb_files_read(h, "/tmp/bench.bin", nil)
      local dt = now() - t
      assert(rc == 0 and rc2 == 0 and #back == #data)
      return dt
    end,
    agent_sandbox = function()
      local t = now()
      assert(sb.files:write("/tmp/bench.bin", data))
      local back = assert(sb.files:read("/tmp/bench.bin"))
      local dt = now() - t
      assert(#back == #data)
      return dt
    end,
  }))
end)
stop_engine()
if not ok then error(err, 0) end
