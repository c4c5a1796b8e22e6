-- The Lua binding's cost over the C library, measured in one run against one
-- real engine and one sandbox, the variants interleaved round by round so
-- that load drift hits them alike:
--
--   - commands.run("true"): C (lua_bench_c: asb_commands_run on a handle of
--     its own to the same sandbox, timed in C), agent_sandbox.core (the
--     SWIG module, no Lua layer), agent_sandbox (sb.commands:run);
--   - a 1 MiB file round trip (write + read), the same three ways.
--
-- Each round makes one call of each variant (C, core, agent_sandbox, their
-- order rotating round by round), so the drift of a loaded machine and
-- whatever the previous call left behind spread over all three alike.
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

-- Per call: the wall time (the variant's own measure) and this process's CPU
-- time (os.clock: every thread of the process, so the C library's own work
-- is in it for all three). The CPU time is what a binding adds to; the wall
-- time also holds the engine, the sandbox and whatever else the machine ran.
local function interleave(order, variants)
  local samples, cpu = {}, {}
  for _, k in ipairs(order) do
    variants[k]() -- warm up
    samples[k], cpu[k] = {}, {}
  end
  for i = 1, iters do
    for j = 0, #order - 1 do -- the order rotates round by round
      local k = order[(i + j) % #order + 1]
      local c0 = os.clock()
      local dt = variants[k]()
      local xs, cs = samples[k], cpu[k]
      cs[#cs + 1] = os.clock() - c0
      xs[#xs + 1] = dt
    end
  end
  return samples, cpu
end

local function report(name, order, samples, cpu)
  local base, cbase = pct(samples[order[1]], 50), mean(cpu[order[1]])
  print("\n" .. name)
  print(("  %-16s %9s %9s %9s %9s %11s %9s"):format("", "p50 us", "p90 us", "mean us",
                                                   "x C p50", "CPU us/call", "x C CPU"))
  for _, k in ipairs(order) do
    local xs = samples[k]
    local p50 = pct(xs, 50)
    local c = mean(cpu[k])
    print(("  %-16s %9.1f %9.1f %9.1f %9.3f %11.1f %9.3f"):format(k, p50 * 1e6, pct(xs, 90) * 1e6,
                                                                mean(xs) * 1e6, p50 / base, c * 1e6,
                                                                c / cbase))
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
  local function bench(name, variants) report(name, order, interleave(order, variants)) end
  bench('commands.run("true") round trip', {
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
  })

  local data = {}
  for i = 1, 1 << 14 do data[i] = string.pack("<I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4",
                                               math.random(0, 0xffffffff), i, i, i, i, i, i, i,
                                               i, i, i, i, i, i, i, i) end
  data = table.concat(data)
  assert(#data == 1 << 20)
  bench("1 MiB file write + read", {
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
  })
end)
stop_engine()
if not ok then error(err, 0) end
