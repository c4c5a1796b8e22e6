-- Shared by the busted specs of the Lua binding (run by run.sh, which
-- starts the engine these talk to and sets ASB_STATE_DIR).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"

local H = {}

H.REPO = os.getenv("ASB_REPO") or (function()
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  return here .. "/../../.."
end)()
H.BUILD = os.getenv("ASB_BUILD_DIR") or (H.REPO .. "/build")

-- Poll fn until it returns a true value (the deadline only stops a test
-- that would otherwise hang; no timing assertion).
function H.eventually(fn, timeout_s)
  local deadline = os.time() + (timeout_s or 30)
  while true do
    local v = fn()
    if v then return v end
    if os.time() > deadline then return v end
    os.execute("sleep 0.05")
  end
end

-- An expected failure: nil, err with err an agent_sandbox.Error of code.
function H.fails(code, v, err)
  assert(v == nil, "expected nil, err; got a value: " .. tostring(v))
  assert(asb.is_error(err), "expected an agent_sandbox.Error, got " .. tostring(err))
  assert(err.code == code, ("expected %s, got %s"):format(code, tostring(err)))
  assert(math.type(err.status) == "integer" and err.status < 0, "status is a negative integer")
  assert(asb._core[code] == err.status, "status is the code's number")
  assert(type(err.message) == "string" and #err.message > 0, "a message")
  assert(tostring(err):find(code, 1, true), "tostring names the code")
  return err
end

-- v, or raise err: assert() for calls whose success may be false.
function H.ok(v, err, ...)
  if v == nil then error(tostring(err), 2) end
  return v, err, ...
end

-- A sandbox for the whole spec file (killed by teardown, and by the
-- engine's --kill-on-exit if the run dies).
function H.sandbox(opts)
  local t = { timeout_ms = 600000 }
  for k, v in pairs(opts or {}) do t[k] = v end
  return assert(asb.Sandbox.create(t))
end

-- The shell-quoted form of s.
function H.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- The command that runs lua5.4 with this run's module (in a sanitizer
-- build: the dynamic loader with the sanitizers' runtime preloaded into
-- that lua5.4 alone, never into the programs it starts — run.sh).
local preload = os.getenv("ASB_LUA_PRELOAD") or ""
H.LUA = preload:match("%S") and
  (H.q(os.getenv("ASB_LUA_LDSO")) .. " --preload " .. H.q(preload) .. " " .. H.q(os.getenv("ASB_LUA_BIN")))
  or "lua5.4"

-- Run a shell command; its output and whether it exited 0.
function H.sh(cmd)
  cmd = "exec sh -c " .. H.q(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok == true, code
end

-- The Python binding's interpreter (build/py-venv), or nil when it is not
-- built.
function H.python()
  local py = os.getenv("ASB_PY_VENV") and (os.getenv("ASB_PY_VENV") .. "/bin/python")
    or (H.BUILD .. "/py-venv/bin/python")
  local _, ok = H.sh(H.q(py) .. " -c 'import agent_sandbox.lowlevel'")
  return ok and py or nil
end

-- A fresh lua5.4 running a script with this run's module paths; its output
-- and whether it succeeded.
function H.lua(script, ...)
  local args = {}
  for i, a in ipairs({ ... }) do args[i] = H.q(a) end
  return H.sh(H.LUA .. " " .. H.q(script) .. " " .. table.concat(args, " "))
end

return H
